import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";

/** `--sink`'s values. */
export const SINK_FLAG_VALUES = ["files"] as const;

/** The demo's sink flags, parsed. */
export interface SinkFlags {
  /** `--sink files`: the counters write their counts through an exactly-once file sink. */
  readonly sink: (typeof SINK_FLAG_VALUES)[number] | undefined;
  /** `--output <dir>`: the sink's folder (made absolute). */
  readonly output: string | undefined;
}

/** The help text of the flags (a section of `--help`). */
export const SINK_HELP = `Output:
  --sink files --output <dir>
                           the counters write their counts to part files in <dir> (missing or
                           empty) through an exactly-once file sink: at each checkpoint the words
                           counted since the previous one, one "word<TAB>count" line each, go to a
                           part file that is renamed into place once the checkpoint completed
                           (hidden ".part-*.inprogress" / ".pending" names before). The summed
                           lines of the committed files are what is verified. Needs
                           --checkpoint-interval (streaming). --kill-task-manager-after then
                           kills at the next half-taken checkpoint after its time (one counter
                           pre-committed, another not yet), which tests the commit rule.`;

/** What {@link parseSinkFlags} reads from the parsed command line. */
export interface SinkFlagValues {
  readonly sink?: string | undefined;
  readonly output?: string | undefined;
}

/**
 * The sink flags, checked: `--sink files` needs `--output` and checkpoints, `--output` needs
 * `--sink`. Throws `usage(message)` for a bad combination.
 */
export function parseSinkFlags(
  values: SinkFlagValues,
  context: { readonly mode: string; readonly checkpointInterval: number | undefined },
  usage: (message: string) => Error,
): SinkFlags {
  const sink = values.sink?.trim().toLowerCase();
  if (sink !== undefined && !(SINK_FLAG_VALUES as readonly string[]).includes(sink)) {
    throw usage(
      `--sink expects ${SINK_FLAG_VALUES.join(" or ")}, got ${JSON.stringify(values.sink)}`,
    );
  }
  if (sink === undefined) {
    if (values.output !== undefined)
      throw usage("--output applies to --sink files only (see --help)");
    return { sink: undefined, output: undefined };
  }
  if (values.output === undefined || values.output.trim() === "") {
    throw usage("--sink files needs --output <dir>: the folder the part files go to (see --help)");
  }
  if (context.mode !== "streaming") {
    throw usage(
      "--sink files applies to --mode streaming only: it commits at checkpoints (see --help)",
    );
  }
  if (context.checkpointInterval === undefined) {
    throw usage(
      "--sink files needs --checkpoint-interval: the sink commits its part files when checkpoints complete (see --help)",
    );
  }
  return { sink: "files", output: path.resolve(values.output) };
}

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
