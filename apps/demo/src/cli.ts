import { parseArgs } from "node:util";
import { parseDynamicProperties } from "@sluice/runtime";
import type { DemoMode } from "./batch-mode.js";
import {
  CHECKPOINTING_FLAG_VALUES,
  CHECKPOINTING_HELP,
  type CheckpointingFlags,
} from "./checkpointing-options.js";
import { parseSinkFlags, SINK_HELP, type SinkFlags } from "./sink-options.js";

/** The demo's defaults. */
export const DEFAULTS = {
  /** Words generated: sized for about 10–20 s on 2 cores. */
  records: 8_000_000,
  parallelism: 2,
  taskManagers: 2,
  seed: 42,
} as const;

export const MAX_PARALLELISM = 256;
export const MAX_TASK_MANAGERS = 16;
/** The most shuffle workers `--shuffle-workers` starts. */
export const MAX_SHUFFLE_WORKERS = 16;
/** Shuffle workers the one-command demo starts with the remote shuffle. */
export const DEFAULT_SHUFFLE_WORKERS = 2;

/** A host and a port, as `--bind` and `--jobmanager` take them. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
}

/** The parsed command line of a run of the job: one command (local) or the job manager role. */
export interface DemoOptions extends CheckpointingFlags, SinkFlags {
  /** `local`: the one-command demo; `jobmanager`: the job manager of a standalone cluster. */
  readonly command: "local" | "jobmanager";
  /** `--bind` (jobmanager only): where the control plane listens. */
  readonly bind: HostPort | undefined;
  /** `--shuffle`: sets `shuffle-service-factory.class` (after the config file and `-D`). */
  readonly shuffle: string | undefined;
  /** `--config`: a config.yaml. */
  readonly configFile: string | undefined;
  /** The `-D` arguments, normalised to `-Dkey=value`, for `Configuration.load`. */
  readonly dynamicProperties: readonly string[];
  /** `--mode`: a streaming job (pipelined exchange) or a batch job (blocking, stage by stage). */
  readonly mode: DemoMode;
  readonly records: number;
  readonly parallelism: number;
  readonly taskManagers: number;
  readonly seed: number;
  /** `--duration`: the sources spread the words over at least this many seconds. */
  readonly durationSeconds: number | undefined;
  /** `--throttle`: words per second each count subtask reads at most, until lifted. */
  readonly throttle: number | undefined;
  /**
   * `--shuffle-workers`: shuffle worker processes the job manager starts next to itself for the
   * remote shuffle (`remote-shuffle.manager.embedded-workers`); unset = the configured value, or
   * 2 without a command.
   */
  readonly shuffleWorkers: number | undefined;
  /**
   * `--kill-shuffle-worker-after`: SIGKILL the shuffle worker that stores the most partitions
   * this long into the counting stage (batch mode, `--shuffle remote`, one command only).
   */
  readonly killShuffleWorkerAfterMs: number | undefined;
  /** `--ha`: sets `high-availability.type` (after the config file and `-D`). */
  readonly highAvailability: string | undefined;
  /**
   * `--job-managers` (one command only): job-manager role processes the demo starts under high
   * availability, one leader and standbys; unset = one job manager in this process.
   */
  readonly jobManagers: number | undefined;
  /**
   * `--kill-job-manager-after`: with `--job-managers`, SIGKILL the leading job manager at each of
   * these times (ms into the job, ascending); a new standby replaces each one killed.
   */
  readonly killJobManagerAfterMs: readonly number[];
  readonly json: boolean;
  readonly help: boolean;
}

/** The most job managers `--job-managers` starts. */
export const MAX_JOB_MANAGERS = 8;
/** The most leader kills `--kill-job-manager-after` takes. */
export const MAX_JOB_MANAGER_KILLS = 16;

/** The longest `--duration`: a day. */
export const MAX_DURATION_SECONDS = 86_400;

/** The parsed command line of the task manager role. */
export interface TaskManagerCommand {
  readonly command: "taskmanager";
  /** `--jobmanager`; else `jobmanager.rpc.address` and `jobmanager.rpc.port`. */
  readonly jobManager: HostPort | undefined;
  /** This host's own configuration: it wins over what the job manager sends. */
  readonly shuffle: string | undefined;
  readonly configFile: string | undefined;
  readonly dynamicProperties: readonly string[];
  /** `--quiet`: print errors only. */
  readonly quiet: boolean;
  readonly help: boolean;
}

/** The parsed command line of the shuffle worker role (`@sluice/shuffle-remote`). */
export interface ShuffleWorkerCommand {
  readonly command: "shuffleworker";
  /**
   * `--jobmanager host[:port]`: the shuffle manager of the job manager's ShuffleMaster; without a
   * port, `remote-shuffle.manager.rpc-port`.
   */
  readonly jobManager: { readonly host: string; readonly port: number | undefined } | undefined;
  readonly configFile: string | undefined;
  readonly dynamicProperties: readonly string[];
  readonly quiet: boolean;
  readonly help: boolean;
}

/** Any command line of the demo. */
export type DemoCommand = DemoOptions | TaskManagerCommand | ShuffleWorkerCommand;

/** A bad command line: the message says what is wrong; the process exits with code 2. */
export class UsageError extends Error {
  readonly exitCode = 2;
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export const HELP_TEXT = `Usage: pnpm demo -- [options]
       pnpm demo -- jobmanager [--bind <host:port>] [options]
       pnpm demo -- taskmanager --jobmanager <host:port> [--config <file>] [-D <key>=<value>]
       pnpm demo -- shuffleworker --jobmanager <host[:port]> [--config <file>] [-D <key>=<value>]
       node apps/demo/dist/main.js ...

A streaming word count over real worker processes: source tasks generate a seeded corpus
(Zipf-like word frequencies), tokenize it and send each word through a key-group hash exchange
to count tasks, over the configured shuffle plugin. The counts are checked against an
in-process reference; the demo prints "verified" and exits 0, or the first differences and
exits 1.

With --mode batch the word count runs as a batch job: the sources write BLOCKING partitions
(sorted, LZ4-compressed files on their task managers) and finish; then the counters are deployed
and read the files, which the job's end deletes. It prints the bytes on disk, the compression
ratio and the files deleted. Unless configured, batch mode gives each task manager 8mb of network
memory (128 sort buffers) and 16mb of read memory, so the default run writes several times that.

Without a command, the demo runs a job manager in this process and its task managers as child
processes on 127.0.0.1. On several machines, start "jobmanager" on one and "taskmanager" on each
of the others: the job manager waits for --task-managers task managers, hands them the job's
configuration, runs the job and prints the summary; the task managers exit when the job ended.

Options:
  --mode <mode>            streaming (default): the counters read while the sources write;
                           batch: stage by stage over BLOCKING partitions on disk (see above)
  --shuffle <plugin>       tcp | ws | remote | <module>#<Export> | <path>#<Export>
                           (sets shuffle-service-factory.class; wins over --config and -D);
                           remote keeps BLOCKING partitions on shuffle workers (batch only)
  --shuffle-workers <n>    with --shuffle remote: shuffle worker processes the job manager
                           starts (default ${DEFAULT_SHUFFLE_WORKERS} without a command, 0 for jobmanager)
  --kill-shuffle-worker-after <ms>
                           with --mode batch --shuffle remote: SIGKILL the shuffle worker that
                           stores the most partitions <ms> into the counting stage; the counters
                           reading from it fail, and the producers of its partitions re-run
  --config <file>          a config.yaml of flat dotted keys (see apps/demo/config.yaml)
  -D <key>=<value>         a config override, repeatable (also -D<key>=<value>)
  --records <n>            words to generate (default ${DEFAULTS.records.toLocaleString("en-US")}; 200k, 2m accepted)
  --parallelism <p>        source and count subtasks each (default ${DEFAULTS.parallelism}, at most ${MAX_PARALLELISM})
  --task-managers <n>      worker processes (default ${DEFAULTS.taskManagers}, at most ${MAX_TASK_MANAGERS})
  --seed <n>               corpus seed (default ${DEFAULTS.seed})
  --duration <s>           keep the job running at least s seconds: the sources spread the
                           words over that time, so there is time to watch the dashboard
  --throttle <n>           each count subtask reads at most n words/s, which back-pressures the
                           sources; the job message "throttle" (the dashboard's form, or
                           POST /jobs/<id>/messages/throttle) changes or lifts it
  --json                   print one JSON summary object as the last line of stdout
                           (human-readable output then goes to stderr)
  -h, --help               show this help

High availability (see the README's "Run it on several machines"):
  --ha <type>              none | etcd | <module>#<Export> (sets high-availability.type; etcd
                           also needs high-availability.etcd.endpoints and .storageDir)
  --job-managers <n>       with --ha etcd, without a command: start n jobmanager processes (one
                           leader, the others standbys; at most ${MAX_JOB_MANAGERS}) and the task managers, which
                           find the leader through etcd. Without high-availability.etcd.endpoints
                           the demo starts its own etcd (the etcd binary on PATH) in a temporary
                           folder and stops it at the end
  --kill-job-manager-after <ms>[,<ms>...]
                           with --job-managers: SIGKILL the leader at each time (ms into the job,
                           ascending; with checkpoints, not before the leader completed one); a
                           standby takes over and a new standby is started in its place. --json
                           adds jobManagerFailovers (detection: kill to a standby elected;
                           recovery: kill to the job running on the new leader)

${CHECKPOINTING_HELP}

${SINK_HELP}

jobmanager:
  --bind <host:port>       where task managers connect (default jobmanager.rpc.address, else
                           127.0.0.1, and jobmanager.rpc.port, 6123)

shuffleworker (with --shuffle remote on the job manager):
  --jobmanager <host[:port]> the job manager's shuffle manager (port: remote-shuffle.manager.rpc-port,
                           default 23123); the worker stores partitions under io.tmp.dirs
  --config, -D             its configuration (remote-shuffle.worker.*, security.ssl.internal.*)
  --quiet                  print errors only

taskmanager:
  --jobmanager <host:port> the job manager (default jobmanager.rpc.address:jobmanager.rpc.port)
  --config, -D, --shuffle  this host's own configuration, on top of the job manager's
                           (e.g. taskmanager.host, security.ssl.internal.key)
  --quiet                  print errors only

The job manager serves a live dashboard on rest.port (default 8081, 127.0.0.1; -D rest.port=0
for any free port) and prints its URL. With -D metrics.reporter.prom.port=9250-9260 every
process serves its metrics for Prometheus (the first free port of the range).

Exit codes: 0 verified, 1 job failed or counts differ (or a task manager lost its job manager),
2 bad command line, configuration or shuffle plugin (also a task manager refused for
another plugin or version).

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
  pnpm demo -- --ha etcd --job-managers 3 --kill-job-manager-after 3000,6000 \
               --checkpoint-interval 200 --records 2m --throttle 100k
  pnpm demo -- jobmanager --bind 0.0.0.0:6123 --task-managers 2     # on host A
  pnpm demo -- taskmanager --jobmanager hostA:6123                  # on hosts B and C
`;

const COUNT = /^(\d+(?:_\d{3})*|\d+(?:\.\d+)?[km])$/i;

/** Parses a positive count: digits (with optional `_` separators) or a `k`/`m` suffix. */
export function parseCount(option: string, text: string, min: number, max: number): number {
  const trimmed = text.trim();
  if (!COUNT.test(trimmed)) {
    throw new UsageError(
      `${option} expects a whole number (e.g. 200000, 200_000, 200k or 2m), got ${JSON.stringify(text)}`,
    );
  }
  const suffix = trimmed.slice(-1).toLowerCase();
  const multiplier = suffix === "k" ? 1_000 : suffix === "m" ? 1_000_000 : 1;
  const value =
    multiplier === 1
      ? Number(trimmed.replaceAll("_", ""))
      : Number(trimmed.slice(0, -1)) * multiplier;
  if (!Number.isSafeInteger(value)) {
    throw new UsageError(`${option} expects a whole number, got ${JSON.stringify(text)}`);
  }
  if (value < min || value > max) {
    throw new UsageError(
      `${option} must be between ${min} and ${max.toLocaleString("en-US")}, got ${value}`,
    );
  }
  return value;
}

/** Parses `host:port` (`[v6]:port` for IPv6). */
export function parseHostPort(option: string, text: string): HostPort {
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text.trim());
  const port = match === null ? Number.NaN : Number(match[3]);
  if (match === null || port > 65535) {
    throw new UsageError(
      `${option} expects <host>:<port> (e.g. 10.0.0.1:6123 or [::1]:6123), got ${JSON.stringify(text)}`,
    );
  }
  return { host: (match[1] ?? match[2]) as string, port };
}

/**
 * Parses the demo's arguments: an optional command (`jobmanager`, `taskmanager`) and its options.
 *
 * @throws UsageError for unknown options, missing or malformed values and malformed `-D`.
 */
export function parseCli(argv: readonly string[]): DemoCommand {
  const [first, ...rest] = argv;
  if (first === "taskmanager") return parseTaskManager(rest);
  if (first === "shuffleworker") return parseShuffleWorker(rest);
  if (first === "jobmanager") return parseJob("jobmanager", rest);
  return parseJob("local", argv);
}

function dynamicPropertiesOf(argv: readonly string[]) {
  // -D is Flink's syntax (`-D k=v` and `-Dk=v`); the runtime's parser picks it out first.
  try {
    return parseDynamicProperties(argv);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function checkPositionals(positionals: readonly string[]): void {
  if (positionals.length > 0) {
    throw new UsageError(
      `unexpected argument ${JSON.stringify(positionals[0])}; options start with "--" (see --help)`,
    );
  }
}

function checkConfigSources(values: { shuffle?: string; config?: string }): void {
  if (values.shuffle !== undefined && values.shuffle.trim() === "") {
    throw new UsageError('--shuffle expects tcp, ws, <module>#<Export> or <path>#<Export>, got ""');
  }
  if (values.config !== undefined && values.config.trim() === "") {
    throw new UsageError('--config expects a file, got ""');
  }
}

/** The common part of the roles' command lines: `-D`, the options, the checks. */
function parseRoleArgs(argv: readonly string[], withShuffle: boolean) {
  const dynamic = dynamicPropertiesOf(argv);
  let parsed: ReturnType<typeof parseRoleOptions>;
  try {
    parsed = parseRoleOptions(dynamic.remaining, withShuffle);
  } catch (error) {
    throw new UsageError(describeParseArgsError(error as Error & { code?: string }));
  }
  const { values, positionals } = parsed;
  checkPositionals(positionals);
  checkConfigSources(values);
  return {
    values,
    dynamicProperties: dynamic.properties.map(([key, value]) => `-D${key}=${value}`),
  };
}

function parseTaskManager(argv: readonly string[]): TaskManagerCommand {
  const { values, dynamicProperties } = parseRoleArgs(argv, true);
  return {
    command: "taskmanager",
    jobManager:
      values.jobmanager === undefined
        ? undefined
        : parseHostPort("--jobmanager", values.jobmanager),
    shuffle: values.shuffle?.trim(),
    configFile: values.config,
    dynamicProperties,
    quiet: values.quiet === true,
    help: values.help === true,
  };
}

function parseShuffleWorker(argv: readonly string[]): ShuffleWorkerCommand {
  const { values, dynamicProperties } = parseRoleArgs(argv, false);
  const address = values.jobmanager?.trim();
  if (address === "") {
    throw new UsageError('--jobmanager expects <host> or <host>:<port>, got ""');
  }
  // Without a port: the shuffle manager's configured one (remote-shuffle.manager.rpc-port).
  const jobManager =
    address === undefined
      ? undefined
      : /:\d+$/.test(address)
        ? parseHostPort("--jobmanager", address)
        : { host: address.replace(/^\[(.*)\]$/, "$1"), port: undefined };
  return {
    command: "shuffleworker",
    jobManager,
    configFile: values.config,
    dynamicProperties,
    quiet: values.quiet === true,
    help: values.help === true,
  };
}

function parseJob(command: "local" | "jobmanager", argv: readonly string[]): DemoOptions {
  const dynamic = dynamicPropertiesOf(argv);
  let parsed: ReturnType<typeof parseOptions>;
  try {
    parsed = parseOptions(dynamic.remaining);
  } catch (error) {
    throw new UsageError(describeParseArgsError(error as Error & { code?: string }));
  }
  const { values, positionals } = parsed;
  checkPositionals(positionals);
  checkConfigSources(values);
  if (command === "local" && values.bind !== undefined) {
    throw new UsageError("--bind is an option of the jobmanager command (see --help)");
  }
  const shuffle = values.shuffle;
  const mode = values.mode ?? "streaming";
  if (mode !== "streaming" && mode !== "batch") {
    throw new UsageError(`--mode expects streaming or batch, got ${JSON.stringify(mode)}`);
  }
  const records =
    values.records === undefined
      ? DEFAULTS.records
      : parseCount("--records", values.records, 1, Number.MAX_SAFE_INTEGER);
  const parallelism =
    values.parallelism === undefined
      ? DEFAULTS.parallelism
      : parseCount("--parallelism", values.parallelism, 1, MAX_PARALLELISM);
  const taskManagers =
    values["task-managers"] === undefined
      ? DEFAULTS.taskManagers
      : parseCount("--task-managers", values["task-managers"], 1, MAX_TASK_MANAGERS);
  const seed =
    values.seed === undefined ? DEFAULTS.seed : parseCount("--seed", values.seed, 0, 2 ** 32 - 1);
  const durationSeconds =
    values.duration === undefined
      ? undefined
      : parseCount("--duration", values.duration, 1, MAX_DURATION_SECONDS);
  const throttle =
    values.throttle === undefined
      ? undefined
      : parseCount("--throttle", values.throttle, 1, Number.MAX_SAFE_INTEGER);
  const killFlags = [
    "kill-task-manager-after",
    "kill-task-manager-between-stages",
    "kill-shuffle-worker-after",
  ].filter((flag) => values[flag as keyof typeof values] !== undefined);
  if (command === "jobmanager" && killFlags.length > 0) {
    throw new UsageError(
      `--${killFlags[0]} kills a ${killFlags[0] === "kill-shuffle-worker-after" ? "shuffle worker" : "task manager"} the demo started: it works without a command only (see --help)`,
    );
  }
  if (killFlags.length > 1) {
    throw new UsageError(
      `--${killFlags[0]} and --${killFlags[1]} each kill a process: give one of them (see --help)`,
    );
  }
  if (mode !== "batch" && values["kill-shuffle-worker-after"] !== undefined) {
    throw new UsageError(
      "--kill-shuffle-worker-after applies to --mode batch only: shuffle workers store BLOCKING partitions (see --help)",
    );
  }
  if (mode !== "batch" && values["kill-task-manager-between-stages"] !== undefined) {
    throw new UsageError(
      "--kill-task-manager-between-stages applies to --mode batch only: a streaming job has one stage (see --help)",
    );
  }
  const failover = parseJobManagerFlags(command, values, killFlags);
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
  if (mode === "batch" && streamingOnly.length > 0) {
    // A batch job recovers by re-running regions from their blocking results, not from
    // checkpoints (as in Flink).
    throw new UsageError(
      `--${streamingOnly[0]} applies to --mode streaming only: a batch job takes no checkpoints (see --help)`,
    );
  }
  const checkpointInterval =
    values["checkpoint-interval"] === undefined
      ? undefined
      : parseCount("--checkpoint-interval", values["checkpoint-interval"], 10, 86_400_000);
  const sinkFlags = parseSinkFlags(
    values,
    { mode, checkpointInterval },
    (message) => new UsageError(message),
  );
  return {
    command,
    bind: values.bind === undefined ? undefined : parseHostPort("--bind", values.bind),
    shuffle: shuffle?.trim(),
    configFile: values.config,
    dynamicProperties: dynamic.properties.map(([key, value]) => `-D${key}=${value}`),
    mode,
    records,
    parallelism,
    taskManagers,
    seed,
    durationSeconds,
    throttle,
    killShuffleWorkerAfterMs:
      values["kill-shuffle-worker-after"] === undefined
        ? undefined
        : parseCount(
            "--kill-shuffle-worker-after",
            values["kill-shuffle-worker-after"],
            1,
            86_400_000,
          ),
    shuffleWorkers:
      values["shuffle-workers"] === undefined
        ? undefined
        : parseCount("--shuffle-workers", values["shuffle-workers"], 0, MAX_SHUFFLE_WORKERS),
    checkpointInterval,
    ...sinkFlags,
    checkpointing: checkpointing as CheckpointingFlags["checkpointing"],
    killTaskManagerAfterMs:
      values["kill-task-manager-after"] === undefined
        ? undefined
        : parseCount("--kill-task-manager-after", values["kill-task-manager-after"], 1, 86_400_000),
    killTaskManagerBetweenStages: values["kill-task-manager-between-stages"] === true,
    ...failover,
    json: values.json === true,
    help: values.help === true,
  };
}

/** `--ha`, `--job-managers` and `--kill-job-manager-after`, checked against the command. */
function parseJobManagerFlags(
  command: "local" | "jobmanager",
  values: ReturnType<typeof parseOptions>["values"],
  killFlags: readonly string[],
): Pick<DemoOptions, "highAvailability" | "jobManagers" | "killJobManagerAfterMs"> {
  const ha = values.ha?.trim();
  if (ha === "") throw new UsageError('--ha expects none, etcd or <module>#<Export>, got ""');
  const count = values["job-managers"];
  const kills = values["kill-job-manager-after"];
  if (command === "jobmanager" && count !== undefined) {
    throw new UsageError(
      "--job-managers starts job-manager processes: it works without a command only; start more jobmanager roles for standbys (see --help)",
    );
  }
  if (kills !== undefined && count === undefined) {
    throw new UsageError(
      "--kill-job-manager-after kills a job manager the demo started: give --job-managers too (see --help)",
    );
  }
  if (count !== undefined && killFlags.length > 0) {
    // The kills of the one-command demo come from the job manager in this process, which
    // --job-managers replaces by job-manager processes.
    throw new UsageError(
      `--${killFlags[0]} does not combine with --job-managers: kill the leader with --kill-job-manager-after (see --help)`,
    );
  }
  const killJobManagerAfterMs =
    kills === undefined
      ? []
      : kills.split(",").map((text) => parseCount("--kill-job-manager-after", text, 1, 86_400_000));
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
      count === undefined ? undefined : parseCount("--job-managers", count, 1, MAX_JOB_MANAGERS),
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

/** The options of the taskmanager role; the shuffleworker role's are the same but `--shuffle`. */
function parseRoleOptions(args: readonly string[], withShuffle: boolean) {
  return parseArgs({
    args: joinNegativeValues(args),
    strict: true,
    allowPositionals: true,
    options: {
      jobmanager: { type: "string" },
      ...(withShuffle ? { shuffle: { type: "string" } } : {}),
      config: { type: "string" },
      quiet: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    } as const,
  }) as { values: RoleValues; positionals: string[] };
}

/** What {@link parseRoleOptions} reads. */
interface RoleValues {
  jobmanager?: string;
  shuffle?: string;
  config?: string;
  quiet?: boolean;
  help?: boolean;
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: joinNegativeValues(args),
    strict: true,
    allowPositionals: true,
    options: {
      bind: { type: "string" },
      mode: { type: "string" },
      shuffle: { type: "string" },
      config: { type: "string" },
      records: { type: "string" },
      parallelism: { type: "string" },
      "task-managers": { type: "string" },
      seed: { type: "string" },
      duration: { type: "string" },
      throttle: { type: "string" },
      "shuffle-workers": { type: "string" },
      "kill-shuffle-worker-after": { type: "string" },
      "checkpoint-interval": { type: "string" },
      checkpointing: { type: "string" },
      "kill-task-manager-after": { type: "string" },
      sink: { type: "string" },
      output: { type: "string" },
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
