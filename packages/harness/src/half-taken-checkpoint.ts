import { readdir } from "node:fs/promises";

/** How often the watch lists the sink's folder: a pre-commit is a rename, seen at the next look. */
const LIST_INTERVAL_MS = 1;

/**
 * Watches a transactional file sink's folder (`TransactionalFileSink` of @sluice/runtime) for the
 * moment one subtask pre-committed its part file of a checkpoint that another subtask has not
 * pre-committed yet, and calls `then` with the latter's index: the checkpoint is then half taken,
 * and the subtask that has not persisted its snapshot cannot have acknowledged it. Killing that
 * subtask's task manager there is the failure a commit rule must survive: the checkpoint never
 * completes, and a sink that made its transaction visible at the snapshot (not at the completion)
 * shows its records twice after the restore from the checkpoint before.
 *
 * A part file counts once, whether seen pending (`.<part>.pending`) or committed (`<part>`): the
 * commit of a transaction pre-committed before the watch began is no new pre-commit. When every
 * subtask pre-committed between two looks, the watch starts over from what it saw.
 *
 * @param directory - the sink's folder.
 * @param subtasks - the writing subtasks' indices.
 * @param subtaskOf - the subtask a committed part file's name belongs to, or undefined for a name
 *   that is no part file (the part files' naming is the application's).
 */
export function whenHalfPreCommitted(
  directory: string,
  subtasks: readonly number[],
  subtaskOf: (part: string) => number | undefined,
  then: (notPreCommitted: number) => void,
): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  let seen: Set<string> | undefined;
  const preCommitted = (entry: string) => {
    const part = /^\.(.+)\.pending$/.exec(entry)?.[1] ?? entry;
    const subtask = subtaskOf(part);
    return subtask === undefined ? [] : [{ part, subtask }];
  };
  const look = async () => {
    timer = undefined;
    const entries = await readdir(directory).catch(() => [] as string[]);
    if (cancelled) return;
    const parts = entries.flatMap(preCommitted);
    if (seen === undefined) {
      seen = new Set(parts.map((p) => p.part));
    } else {
      const fresh = new Set(parts.filter((p) => !seen?.has(p.part)).map((p) => p.subtask));
      if (fresh.size > 0) {
        const behind = subtasks.find((subtask) => !fresh.has(subtask));
        if (behind !== undefined) {
          then(behind);
          return;
        }
        seen = new Set(parts.map((p) => p.part));
      }
    }
    timer = setTimeout(look, LIST_INTERVAL_MS);
  };
  void look();
  return {
    cancel: () => {
      cancelled = true;
      clearTimeout(timer);
    },
  };
}
