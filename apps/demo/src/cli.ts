import { parseArgs } from "node:util";
import { isSluiceError } from "@sluice/core";
import { parseDynamicProperties } from "@sluice/runtime";
import {
  MAX_PARALLELISM,
  parseCount,
  WORD_COUNT_ARGS,
  WORD_COUNT_ARGS_HELP,
  WORD_COUNT_DEFAULTS,
  type WordCountOptions,
  wordCountOptionsOf,
} from "./word-count-options.js";

/** The demo's defaults. */
export const DEFAULTS = { ...WORD_COUNT_DEFAULTS, taskManagers: 2 } as const;

export const MAX_TASK_MANAGERS = 16;
/** The most shuffle workers `--shuffle-workers` starts. */
export const MAX_SHUFFLE_WORKERS = 16;
/** Shuffle workers the demo's cluster starts with the remote shuffle. */
export const DEFAULT_SHUFFLE_WORKERS = 2;
/** The most job managers `--job-managers` starts. */
export const MAX_JOB_MANAGERS = 8;
/** The most leader kills `--kill-job-manager-after` takes. */
export const MAX_JOB_MANAGER_KILLS = 16;
export { MAX_PARALLELISM };

/** `--checkpointing`'s values. */
export const CHECKPOINTING_FLAG_VALUES = ["exactly-once", "at-least-once"] as const;

/** A host and a port, as `--jobmanager` takes them. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/**
 * Where the word count runs: `local`, a cluster the demo starts on this host (a job manager in its
 * process, task managers as `sluice taskmanager` processes); `standby`, `--job-managers` `sluice
 * jobmanager` processes under high availability with their task managers; `session`, a running
 * session cluster (`--jobmanager`), which the demo only submits to.
 */
export type DemoCluster = "local" | "standby" | "session";

/** The parsed command line. */
export interface DemoOptions extends WordCountOptions {
  readonly cluster: DemoCluster;
  /** `--jobmanager`: the session cluster's REST endpoint. */
  readonly jobManager: HostPort | undefined;
  /** `--shuffle`: sets `shuffle-service-factory.class` (after the config file and `-D`). */
  readonly shuffle: string | undefined;
  /** `--config`: a config.yaml. */
  readonly configFile: string | undefined;
  /** The `-D` arguments, normalised to `-Dkey=value`, for `Configuration.load`. */
  readonly dynamicProperties: readonly string[];
  readonly taskManagers: number;
  /** `--shuffle-workers`: shuffle workers the job manager starts for the remote shuffle. */
  readonly shuffleWorkers: number | undefined;
  /** `--checkpoint-interval <ms>`: sets `execution.checkpointing.interval`. */
  readonly checkpointInterval: number | undefined;
  /** `--checkpointing`: sets `execution.checkpointing.mode`. */
  readonly checkpointing: (typeof CHECKPOINTING_FLAG_VALUES)[number] | undefined;
  /** `--sink files`: the counters write through the exactly-once file sink into `output`. */
  readonly sink: "files" | undefined;
  /** `--kill-task-manager-after <ms>`: SIGKILL a task manager this long into the job. */
  readonly killTaskManagerAfterMs: number | undefined;
  /** `--kill-task-manager-between-stages`: SIGKILL a task manager as the counters start. */
  readonly killTaskManagerBetweenStages: boolean;
  /** `--kill-shuffle-worker-after <ms>`: SIGKILL the busiest shuffle worker into the counting stage. */
  readonly killShuffleWorkerAfterMs: number | undefined;
  /** `--ha`: sets `high-availability.type` (after the config file and `-D`). */
  readonly highAvailability: string | undefined;
  /** `--job-managers`: `sluice jobmanager` processes under high availability. */
  readonly jobManagers: number | undefined;
  /** `--kill-job-manager-after`: SIGKILL the leader at each of these times (ascending). */
  readonly killJobManagerAfterMs: readonly number[];
  readonly json: boolean;
  readonly help: boolean;
}

/** A bad command line: the message says what is wrong; the process exits with code 2. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export const HELP_TEXT = `Usage: pnpm demo -- [options]
       pnpm demo -- --jobmanager <host:port> [job options]
       node apps/demo/dist/main.js ...

A streaming word count over real worker processes: source tasks generate a seeded corpus
(Zipf-like word frequencies), tokenize it and send each word through a key-group hash exchange
to count tasks, over the configured shuffle plugin. The counts are checked against an
in-process reference; the demo prints "verified" and exits 0, or the first differences and
exits 1.

The word count is a job module (apps/demo/dist/word-count-job.js): the demo starts a cluster on
this host — a job manager in its process with its REST endpoint and dashboard, and --task-managers
"sluice taskmanager" processes — submits the module's job graph, follows the job through the
REST API, verifies the counts and stops the cluster. On several machines, start the processes
with "pnpm sluice jobmanager" and "pnpm sluice taskmanager --usrlib apps/demo/dist", and submit
with "pnpm sluice run apps/demo/dist/word-count-job.js", or with this demo and --jobmanager to
have the counts verified (see the README's "Run it on several machines").

With --mode batch the word count runs as a batch job: the sources write BLOCKING partitions
(sorted, LZ4-compressed files on their task managers) and finish; then the counters are deployed
and read the files, which the job's end deletes. It prints the bytes on disk, the compression
ratio and the files deleted. Unless configured, batch mode gives each task manager 8mb of network
memory (128 sort buffers) and 16mb of read memory, so the default run writes several times that.

Job options (the job module's arguments):
${WORD_COUNT_ARGS_HELP}

Cluster options:
  --shuffle <plugin>       tcp | ws | remote | <module>#<Export> | <path>#<Export>
                           (sets shuffle-service-factory.class; wins over --config and -D);
                           remote keeps BLOCKING partitions on shuffle workers (batch only)
  --shuffle-workers <n>    with --shuffle remote: shuffle worker processes the job manager
                           starts (default ${DEFAULT_SHUFFLE_WORKERS})
  --config <file>          a config.yaml of flat dotted keys (see apps/demo/config.yaml)
  -D <key>=<value>         a config override, repeatable (also -D<key>=<value>)
  --task-managers <n>      task manager processes (default ${DEFAULTS.taskManagers}, at most ${MAX_TASK_MANAGERS})
  --jobmanager <host:port> run on a session cluster instead, at this REST endpoint (rest.port,
                           8081): its task managers must load the job module
                           (sluice taskmanager --usrlib apps/demo/dist); the cluster options and
                           the kills do not apply
  --json                   print one JSON summary object as the last line of stdout
                           (human-readable output then goes to stderr)
  -h, --help               show this help

Checkpoints and recovery:
  --checkpoint-interval <ms>
                           take a checkpoint every <ms> (execution.checkpointing.interval); the
                           sources snapshot their offsets, the counters their counts, into
                           state.checkpoints.dir (default: a folder in the system temp dir)
  --checkpointing <mode>   exactly-once (default) | at-least-once (execution.checkpointing.mode)
  --kill-task-manager-after <ms>
                           SIGKILL one task manager <ms> into the job (with checkpoints, not
                           before the first one completed): a replacement is started and the
                           job restarts from its latest checkpoint (restart-strategy.*; default
                           with checkpoints: exponential-delay, 1 s growing to 1 min, no limit).
                           With --mode batch: <ms> into the counting stage (after every source
                           finished); only the regions that must re-run do: the sources that
                           lived on the lost task manager, and the counters that read their
                           partitions
  --kill-task-manager-between-stages
                           --mode batch: SIGKILL one task manager right after the sources
                           finished, before the counters read; its sources' partitions are
                           lost and produced again
  --kill-shuffle-worker-after <ms>
                           with --mode batch --shuffle remote: SIGKILL the shuffle worker that
                           stores the most partitions <ms> into the counting stage; the counters
                           reading from it fail, and the producers of its partitions re-run
  A batch job given no restart-strategy.type takes none (Flink's default without checkpoints);
  with a kill the demo then sets restart-strategy.type=fixed-delay, 3 attempts, 200 ms apart.
  With --throttle the job is back-pressured: with -D execution.checkpointing.unaligned.enabled=true
  checkpoints then store the in-flight data (channel state), and a restart replays it.

Output:
  --sink files --output <dir>
                           the counters write their counts to part files in <dir> (missing or
                           empty) through an exactly-once file sink: at each checkpoint the words
                           counted since the previous one, one "word<TAB>count" line each, go to a
                           part file that is renamed into place once the checkpoint completed
                           (hidden ".part-*.inprogress" / ".pending" names before). The summed
                           lines of the committed files are what is verified. Needs
                           --checkpoint-interval (streaming). --kill-task-manager-after then
                           kills at the next half-taken checkpoint after its time (one counter
                           pre-committed, another not yet), which tests the commit rule.

High availability (see the README's "Standby job managers on etcd"):
  --ha <type>              none | etcd | <module>#<Export> (sets high-availability.type; etcd
                           also needs high-availability.etcd.endpoints and .storageDir)
  --job-managers <n>       with --ha etcd: start n "sluice jobmanager" processes (one leader,
                           the others standbys; at most ${MAX_JOB_MANAGERS}) and the task managers, which
                           find the leader through etcd. Without high-availability.etcd.endpoints
                           the demo starts its own etcd (the etcd binary on PATH) in a temporary
                           folder and stops it at the end
  --kill-job-manager-after <ms>[,<ms>...]
                           with --job-managers: SIGKILL the leader at each time (ms into the job,
                           ascending; with checkpoints, not before the leader completed one); a
                           standby takes over and a new standby is started in its place. --json
                           adds jobManagerFailovers (detection: kill to a standby elected;
                           recovery: kill to the job running on the new leader)

The job manager serves a live dashboard on rest.port (default 8081, 127.0.0.1; -D rest.port=0
for any free port) and prints its URL. With -D metrics.reporter.prom.port=9250-9260 every
process serves its metrics for Prometheus (the first free port of the range).

"pnpm demo -- jobmanager|taskmanager|shuffleworker ..." run the sluice commands of the same name
(a task manager with --usrlib apps/demo/dist); see "pnpm sluice <command> --help".

Exit codes: 0 verified, 1 job failed or counts differ, 2 bad command line, configuration or
shuffle plugin.

Examples:
  pnpm demo
  pnpm demo -- --shuffle ws --records 500k
  pnpm demo -- --mode batch
  pnpm demo -- --mode batch --shuffle remote --shuffle-workers 2
  pnpm demo -- -D shuffle-service-factory.class=@sluice/shuffle-tcp#TcpShuffleServiceFactory --json
  pnpm demo -- --config apps/demo/config.yaml -D taskmanager.memory.segment-size=16kb
  pnpm demo -- --duration 60 --throttle 20k                         # then open the dashboard
  pnpm demo -- --checkpoint-interval 200 --kill-task-manager-after 3000
  pnpm demo -- --mode batch --kill-task-manager-between-stages
  pnpm demo -- --ha etcd --job-managers 3 --kill-job-manager-after 3000,6000 \\
               --checkpoint-interval 200 --records 2m --throttle 100k
  pnpm demo -- --jobmanager hostA:8081 --records 2m                 # a session cluster
`;

/** Parses `host:port` (`[v6]:port` for IPv6). */
export function parseHostPort(option: string, text: string): HostPort {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535) {
    throw new UsageError(
      `${option} expects <host>:<port> (e.g. 10.0.0.1:8081 or [::1]:8081), got ${JSON.stringify(text)}`,
    );
  }
  return { host: (match[1] ?? match[2]) as string, port };
}

/** A count option, its errors as usage errors. */
function count(option: string, text: string, min: number, max: number): number {
  return asUsage(() => parseCount(option, text, min, max));
}

function asUsage<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (isSluiceError(error)) throw new UsageError(error.message);
    throw error;
  }
}

/** The options that configure a cluster the demo starts: refused with `--jobmanager`. */
const CLUSTER_FLAGS = [
  "shuffle",
  "config",
  "task-managers",
  "shuffle-workers",
  "checkpoint-interval",
  "checkpointing",
  "ha",
  "job-managers",
  "kill-task-manager-after",
  "kill-task-manager-between-stages",
  "kill-shuffle-worker-after",
  "kill-job-manager-after",
] as const;

/**
 * Parses the demo's arguments.
 *
 * @throws UsageError for unknown options, missing or malformed values, malformed `-D` and options
 *   that do not combine.
 */
export function parseCli(argv: readonly string[]): DemoOptions {
  let dynamic: ReturnType<typeof parseDynamicProperties>;
  try {
    // -D is Flink's syntax (`-D k=v` and `-Dk=v`); the runtime's parser picks it out first.
    dynamic = parseDynamicProperties(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(dynamic.remaining);
  } catch (error) {
    throw new UsageError(describeParseArgsError(error as Error & { code?: string }));
  }
  const { values, positionals } = parsed;
  if (positionals.length > 0) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(positionals[0])}; options start with "--" (see --help)`,
    );
  }
  if (values.shuffle !== undefined && values.shuffle.trim() === "") {
    throw new UsageError('--shuffle expects tcp, ws, <module>#<Export> or <path>#<Export>, got ""');
  }
  if (values.config !== undefined && values.config.trim() === "") {
    throw new UsageError('--config expects a file, got ""');
  }
  const job = asUsage(() => wordCountOptionsOf({ ...values, output: undefined }));
  const jobManager =
    values.jobmanager === undefined ? undefined : parseHostPort("--jobmanager", values.jobmanager);
  if (jobManager !== undefined) {
    const given = CLUSTER_FLAGS.find((flag) => values[flag] !== undefined);
    if (given !== undefined || dynamic.properties.length > 0) {
      throw new UsageError(
        `${given === undefined ? "-D" : `--${given}`} configures or acts on the cluster the demo starts; with --jobmanager the session cluster has its own (give it to sluice jobmanager)`,
      );
    }
  }
  const killFlags = [
    "kill-task-manager-after",
    "kill-task-manager-between-stages",
    "kill-shuffle-worker-after",
  ].filter((flag) => values[flag as keyof typeof values] !== undefined);
  if (killFlags.length > 1) {
    throw new UsageError(
      `--${killFlags[0]} and --${killFlags[1]} each kill a process: give one of them (see --help)`,
    );
  }
  if (job.mode !== "batch" && values["kill-shuffle-worker-after"] !== undefined) {
    throw new UsageError(
      "--kill-shuffle-worker-after applies to --mode batch only: shuffle workers store BLOCKING partitions (see --help)",
    );
  }
  if (job.mode !== "batch" && values["kill-task-manager-between-stages"] !== undefined) {
    throw new UsageError(
      "--kill-task-manager-between-stages applies to --mode batch only: a streaming job has one stage (see --help)",
    );
  }
  const checkpointing = values.checkpointing?.trim().toLowerCase();
  if (
    checkpointing !== undefined &&
    !(CHECKPOINTING_FLAG_VALUES as readonly string[]).includes(checkpointing)
  ) {
    throw new UsageError(
      `--checkpointing expects ${CHECKPOINTING_FLAG_VALUES.join(" or ")}, got ${JSON.stringify(values.checkpointing)}`,
    );
  }
  const streamingOnly = ["checkpoint-interval", "checkpointing"].filter(
    (flag) => values[flag as keyof typeof values] !== undefined,
  );
  if (job.mode === "batch" && streamingOnly.length > 0) {
    // A batch job recovers by re-running regions from their blocking results, not from
    // checkpoints (as in Flink).
    throw new UsageError(
      `--${streamingOnly[0]} applies to --mode streaming only: a batch job takes no checkpoints (see --help)`,
    );
  }
  const checkpointInterval =
    values["checkpoint-interval"] === undefined
      ? undefined
      : count("--checkpoint-interval", values["checkpoint-interval"], 10, 86_400_000);
  const output = parseSink(values, job.mode, checkpointInterval, jobManager !== undefined);
  const failover = parseJobManagerFlags(values, killFlags);
  return {
    ...job,
    output,
    cluster:
      jobManager !== undefined
        ? "session"
        : failover.jobManagers !== undefined
          ? "standby"
          : "local",
    jobManager,
    shuffle: values.shuffle?.trim(),
    configFile: values.config,
    dynamicProperties: dynamic.properties.map(([key, value]) => `-D${key}=${value}`),
    taskManagers:
      values["task-managers"] === undefined
        ? DEFAULTS.taskManagers
        : count("--task-managers", values["task-managers"], 1, MAX_TASK_MANAGERS),
    shuffleWorkers:
      values["shuffle-workers"] === undefined
        ? undefined
        : count("--shuffle-workers", values["shuffle-workers"], 0, MAX_SHUFFLE_WORKERS),
    checkpointInterval,
    checkpointing: checkpointing as DemoOptions["checkpointing"],
    sink: output === undefined ? undefined : "files",
    killTaskManagerAfterMs:
      values["kill-task-manager-after"] === undefined
        ? undefined
        : count("--kill-task-manager-after", values["kill-task-manager-after"], 1, 86_400_000),
    killTaskManagerBetweenStages: values["kill-task-manager-between-stages"] === true,
    killShuffleWorkerAfterMs:
      values["kill-shuffle-worker-after"] === undefined
        ? undefined
        : count("--kill-shuffle-worker-after", values["kill-shuffle-worker-after"], 1, 86_400_000),
    ...failover,
    json: values.json === true,
    help: values.help === true,
  };
}

/**
 * `--sink files --output <dir>`: the output folder, made absolute. `--sink files` needs
 * `--output` and a streaming job with checkpoints (on a session cluster, the cluster's).
 */
function parseSink(
  values: { sink?: string | undefined; output?: string | undefined },
  mode: string,
  checkpointInterval: number | undefined,
  session: boolean,
): string | undefined {
  const sink = values.sink?.trim().toLowerCase();
  if (sink !== undefined && sink !== "files") {
    throw new UsageError(`--sink expects files, got ${JSON.stringify(values.sink)}`);
  }
  if (sink === undefined) {
    if (values.output !== undefined) {
      throw new UsageError("--output applies to --sink files only (see --help)");
    }
    return undefined;
  }
  if (values.output === undefined || values.output.trim() === "") {
    throw new UsageError(
      "--sink files needs --output <dir>: the folder the part files go to (see --help)",
    );
  }
  if (mode !== "streaming") {
    throw new UsageError(
      "--sink files applies to --mode streaming only: it commits at checkpoints (see --help)",
    );
  }
  if (checkpointInterval === undefined && !session) {
    throw new UsageError(
      "--sink files needs --checkpoint-interval: the sink commits its part files when checkpoints complete (see --help)",
    );
  }
  return asUsage(() => wordCountOptionsOf({ output: values.output }).output);
}

/** `--ha`, `--job-managers` and `--kill-job-manager-after`, checked against each other. */
function parseJobManagerFlags(
  values: ReturnType<typeof parseOptions>["values"],
  killFlags: readonly string[],
): Pick<DemoOptions, "highAvailability" | "jobManagers" | "killJobManagerAfterMs"> {
  const ha = values.ha?.trim();
  if (ha === "") throw new UsageError('--ha expects none, etcd or <module>#<Export>, got ""');
  const jobManagers = values["job-managers"];
  const kills = values["kill-job-manager-after"];
  if (kills !== undefined && jobManagers === undefined) {
    throw new UsageError(
      "--kill-job-manager-after kills a job manager the demo started: give --job-managers too (see --help)",
    );
  }
  if (jobManagers !== undefined && killFlags.length > 0) {
    // The other kills act on the cluster in the demo's process, which --job-managers replaces by
    // job-manager processes.
    throw new UsageError(
      `--${killFlags[0]} does not combine with --job-managers: kill the leader with --kill-job-manager-after (see --help)`,
    );
  }
  const killJobManagerAfterMs =
    kills === undefined
      ? []
      : kills.split(",").map((text) => count("--kill-job-manager-after", text, 1, 86_400_000));
  if (killJobManagerAfterMs.length > MAX_JOB_MANAGER_KILLS) {
    throw new UsageError(
      `--kill-job-manager-after takes at most ${MAX_JOB_MANAGER_KILLS} times, got ${killJobManagerAfterMs.length}`,
    );
  }
  if (killJobManagerAfterMs.some((ms, i) => i > 0 && ms <= (killJobManagerAfterMs[i - 1] ?? 0))) {
    throw new UsageError(
      `--kill-job-manager-after expects ascending times, got ${JSON.stringify(kills)}`,
    );
  }
  return {
    highAvailability: ha,
    jobManagers:
      jobManagers === undefined
        ? undefined
        : count("--job-managers", jobManagers, 1, MAX_JOB_MANAGERS),
    killJobManagerAfterMs,
  };
}

/**
 * parseArgs reads `--records -5` as an option without a value followed by the short option `-5`;
 * join a value that looks like a negative number to its option (`--records=-5`), so that the
 * option's own check names the value.
 */
function joinNegativeValues(args: readonly string[]): string[] {
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const next = args[i + 1];
    if (/^--[\w-]+$/.test(arg) && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: joinNegativeValues(args),
    strict: true,
    allowPositionals: true,
    options: {
      ...WORD_COUNT_ARGS,
      jobmanager: { type: "string" },
      shuffle: { type: "string" },
      config: { type: "string" },
      "task-managers": { type: "string" },
      "shuffle-workers": { type: "string" },
      "kill-shuffle-worker-after": { type: "string" },
      "checkpoint-interval": { type: "string" },
      checkpointing: { type: "string" },
      "kill-task-manager-after": { type: "string" },
      sink: { type: "string" },
      "kill-task-manager-between-stages": { type: "boolean" },
      ha: { type: "string" },
      "job-managers": { type: "string" },
      "kill-job-manager-after": { type: "string" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

/** Node's parseArgs messages mention its own API; say it in the demo's terms. */
function describeParseArgsError(error: Error & { code?: string }): string {
  const message = error.message;
  if (error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") {
    const option = /'([^']+)'/.exec(message)?.[1] ?? message;
    return `unknown option ${option} (see --help)`;
  }
  if (error.code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    const option = /Option '(?:-\w, )?(--[\w-]+)/.exec(message)?.[1];
    if (option === undefined) return message;
    return message.includes("does not take an argument")
      ? `${option} takes no value (see --help)`
      : `${option} expects a value (see --help)`;
  }
  return message;
}
