import { readdir } from "node:fs/promises";
import { COMMITTED_PART_FILE } from "./sink-options.js";

/** How often the watch lists the sink's folder: a pre-commit is a rename, seen at the next look. */
const LIST_INTERVAL_MS = 1;

/**
 * The subtask index and the part file of a pre-committed or committed name of the file sink
 * (`.<part>.pending` or `<part>`, see `COMMITTED_PART_FILE`), or undefined
 * for any other entry (the in-progress files, which exist before the snapshot).
 */
function preCommittedPart(entry: string): { subtask: number; part: string } | undefined {
  const part = /^\.(.+)\.pending$/.exec(entry)?.[1] ?? entry;
  const subtask = COMMITTED_PART_FILE.exec(part)?.[1];
  return subtask === undefined ? undefined : { part, subtask: Number(subtask) };
}

/**
 * Watches the file sink's folder for the moment one count subtask pre-committed its part file of
 * a checkpoint that another count subtask has not pre-committed yet, and calls `then` with the
 * latter's index: a checkpoint is then half taken, and the subtask that has not persisted its
 * snapshot cannot have acknowledged it. Killing that subtask's task manager there is the
 * failure a commit rule must survive: the checkpoint never completes, and a sink that made its
 * transaction visible at the snapshot (not at the completion) shows its records twice after the
 * restore from the checkpoint before.
 *
 * A part file counts once, whether seen pending or committed (the commit of a transaction
 * pre-committed before the watch began is not a new pre-commit). When every subtask
 * pre-committed between two looks, the watch starts over from what it saw.
 *
 * @param directory the sink's folder (`--output`).
 * @param subtasks the count subtasks' indices.
 */
export function whenHalfPreCommitted(
  directory: string,
  subtasks: readonly number[],
  then: (notPreCommitted: number) => void,
): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  let seen: Set<string> | undefined;
  const look = async () => {
    timer = undefined;
    const entries = await readdir(directory).catch(() => [] as string[]);
    if (cancelled) return;
    const parts = entries.flatMap((entry) => preCommittedPart(entry) ?? []);
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
