import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";

/**
 * Throws `usage(message)` when `directory` exists and is not an empty folder: the verification
 * reads every committed file in it, so an earlier run's files would count twice.
 */
export async function checkOutputDirectory(
  directory: string,
  usage: (message: string) => Error,
): Promise<void> {
  const found = await stat(directory).catch(() => undefined);
  if (found === undefined) return;
  if (!found.isDirectory()) throw usage(`--output ${directory} is not a folder`);
  const entries = await readdir(directory);
  if (entries.length > 0) {
    throw usage(
      `--output ${directory} is not empty (${entries.length} entries): the verification reads every part file in it; give a new or empty folder`,
    );
  }
}

/**
 * A committed part file's name, `part-<subtask>-<job id>-<leadership epoch>-<attempt>-<n>`:
 * group 1 is the subtask.
 */
export const COMMITTED_PART_FILE = /^part-(\d+)-[0-9a-f]{32}-[A-Za-z0-9]+-\d+-\d+$/;

/** What the committed part files of a run hold. */
export interface CommittedOutput {
  /** Count subtask i's counts at index i: the sums of its committed lines. */
  readonly countsBySubtask: Map<string, number>[];
  readonly committedFiles: number;
  readonly committedBytes: number;
  /** What is wrong with the folder: in-progress or pending files left, malformed lines. */
  readonly differences: string[];
}

/**
 * Reads the sink's folder after the job: sums the `word<TAB>count` lines of every committed
 * part file (`part-<subtask>-...`, see {@link COMMITTED_PART_FILE}) per subtask, and names what should not be there.
 */
export async function readCommittedOutput(
  directory: string,
  parallelism: number,
): Promise<CommittedOutput> {
  const countsBySubtask = Array.from({ length: parallelism }, () => new Map<string, number>());
  const differences: string[] = [];
  let committedFiles = 0;
  let committedBytes = 0;
  const entries = (await readdir(directory).catch(() => [] as string[])).sort();
  const leftover = entries.filter((name) => name.startsWith("."));
  if (leftover.length > 0) {
    differences.push(
      `${leftover.length} in-progress or pending part file(s) left in ${directory}: ${leftover.slice(0, 3).join(", ")}`,
    );
  }
  for (const name of entries) {
    if (name.startsWith(".")) continue;
    const subtask = Number(COMMITTED_PART_FILE.exec(name)?.[1] ?? Number.NaN);
    const counts = countsBySubtask[subtask];
    if (counts === undefined) {
      differences.push(`${path.join(directory, name)} is not a part file of a count subtask`);
      continue;
    }
    const text = await readFile(path.join(directory, name), "utf8");
    committedFiles++;
    committedBytes += Buffer.byteLength(text);
    for (const line of text.split("\n")) {
      if (line === "") continue;
      const match = /^([^\t]+)\t(\d+)$/.exec(line);
      if (match === null) {
        differences.push(
          `${name}: not a "word<TAB>count" line: ${JSON.stringify(line.slice(0, 80))}`,
        );
        continue;
      }
      const word = match[1] as string;
      counts.set(word, (counts.get(word) ?? 0) + Number(match[2]));
    }
  }
  return { countsBySubtask, committedFiles, committedBytes, differences };
}
