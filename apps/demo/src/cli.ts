import { parseArgs } from "node:util";
import { parseDynamicProperties } from "@sluice/runtime";

/** The demo's defaults. */
export const DEFAULTS = {
  /** Words generated: sized for about 10–20 s on 2 cores. */
  records: 8_000_000,
  parallelism: 2,
  taskManagers: 2,
  seed: 42,
} as const;

export const MAX_PARALLELISM = 64;
export const MAX_TASK_MANAGERS = 16;

/** The parsed command line of the coordinator. */
export interface DemoOptions {
  /** `--shuffle`: sets `shuffle-service-factory.class` (after the config file and `-D`). */
  readonly shuffle: string | undefined;
  /** `--config`: a config.yaml. */
  readonly configFile: string | undefined;
  /** The `-D` arguments, normalised to `-Dkey=value`, for `Configuration.load`. */
  readonly dynamicProperties: readonly string[];
  readonly records: number;
  readonly parallelism: number;
  readonly taskManagers: number;
  readonly seed: number;
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
       node apps/demo/dist/main.js [options]

A streaming word count over real worker processes: source tasks generate a seeded corpus
(Zipf-like word frequencies), tokenize it and send each word through a key-group hash exchange
to count tasks, over the configured shuffle plugin. The counts are checked against an
in-process reference; the demo prints "verified" and exits 0, or the first differences and
exits 1.

Options:
  --shuffle <plugin>       tcp | ws | <module>#<Export> | <path>#<Export>
                           (sets shuffle-service-factory.class; wins over --config and -D)
  --config <file>          a config.yaml of flat dotted keys (see apps/demo/config.yaml)
  -D <key>=<value>         a config override, repeatable (also -D<key>=<value>)
  --records <n>            words to generate (default ${DEFAULTS.records.toLocaleString("en-US")}; 200k, 2m accepted)
  --parallelism <p>        source and count subtasks each (default ${DEFAULTS.parallelism}, at most ${MAX_PARALLELISM})
  --task-managers <n>      worker processes (default ${DEFAULTS.taskManagers}, at most ${MAX_TASK_MANAGERS})
  --seed <n>               corpus seed (default ${DEFAULTS.seed})
  --json                   print one JSON summary object as the last line of stdout
                           (human-readable output then goes to stderr)
  -h, --help               show this help

Exit codes: 0 verified, 1 job failed or counts differ, 2 bad command line or configuration.

Examples:
  pnpm demo
  pnpm demo -- --shuffle ws --records 500k
  pnpm demo -- -D shuffle-service-factory.class=@sluice/shuffle-tcp#TcpShuffleServiceFactory --json
  pnpm demo -- --config apps/demo/config.yaml -D taskmanager.memory.segment-size=16kb
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

/**
 * Parses the coordinator's arguments.
 *
 * @throws UsageError for unknown options, missing or malformed values and malformed `-D`.
 */
export function parseCli(argv: readonly string[]): DemoOptions {
  // -D is Flink's syntax (`-D k=v` and `-Dk=v`); the runtime's parser picks it out first.
  let dynamic: ReturnType<typeof parseDynamicProperties>;
  try {
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
  const shuffle = values.shuffle;
  if (shuffle !== undefined && shuffle.trim() === "") {
    throw new UsageError('--shuffle expects tcp, ws, <module>#<Export> or <path>#<Export>, got ""');
  }
  if (values.config !== undefined && values.config.trim() === "") {
    throw new UsageError('--config expects a file, got ""');
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
  return {
    shuffle: shuffle?.trim(),
    configFile: values.config,
    dynamicProperties: dynamic.properties.map(([key, value]) => `-D${key}=${value}`),
    records,
    parallelism,
    taskManagers,
    seed,
    json: values.json === true,
    help: values.help === true,
  };
}

function parseOptions(args: readonly string[]) {
  return parseArgs({
    args: [...args],
    strict: true,
    allowPositionals: true,
    options: {
      shuffle: { type: "string" },
      config: { type: "string" },
      records: { type: "string" },
      parallelism: { type: "string" },
      "task-managers": { type: "string" },
      seed: { type: "string" },
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
