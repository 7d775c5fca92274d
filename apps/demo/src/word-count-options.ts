import path from "node:path";
import { parseArgs } from "node:util";
import { ConfigurationError } from "@sluice/core";

/** The word count's two ways to run. */
export type WordCountMode = "streaming" | "batch";

/** What the word count is built from: the job module's arguments, parsed. */
export interface WordCountOptions {
  /** Words to generate. */
  readonly records: number;
  /** Source and count subtasks each. */
  readonly parallelism: number;
  /** The corpus's seed. */
  readonly seed: number;
  /**
   * Spread the words over at least this many seconds: each source paces itself to its share ÷
   * duration words per second.
   */
  readonly durationSeconds: number | undefined;
  /** `batch`: the exchange is BLOCKING, so the job runs stage by stage. */
  readonly mode: WordCountMode;
  /** Words per second each count subtask reads at first (the job message `throttle` changes it). */
  readonly throttle: number | undefined;
  /** The file sink's folder: the counters write their counts to part files there. */
  readonly output: string | undefined;
}

/** The word count's defaults. */
export const WORD_COUNT_DEFAULTS = {
  /** Words generated: sized for about 10–20 s on 2 cores. */
  records: 8_000_000,
  parallelism: 2,
  seed: 42,
} as const;

/** The most subtasks per vertex. */
export const MAX_PARALLELISM = 256;
/** The longest `--duration`: a day. */
export const MAX_DURATION_SECONDS = 86_400;

/**
 * The job module's options, as `parseArgs` reads them (the demo's command line takes them too,
 * with the same meaning).
 */
export const WORD_COUNT_ARGS = {
  records: { type: "string" },
  parallelism: { type: "string" },
  seed: { type: "string" },
  duration: { type: "string" },
  mode: { type: "string" },
  throttle: { type: "string" },
  output: { type: "string" },
} as const;

/** The values {@link WORD_COUNT_ARGS} parse to. */
export type WordCountArgValues = {
  readonly [K in keyof typeof WORD_COUNT_ARGS]?: string | undefined;
};

/** The job module's help: what `createJobGraph` reads from its arguments. */
export const WORD_COUNT_ARGS_HELP = `  --records <n>            words to generate (default ${WORD_COUNT_DEFAULTS.records.toLocaleString("en-US")}; 200k, 2m accepted)
  --parallelism <p>        source and count subtasks each (default ${WORD_COUNT_DEFAULTS.parallelism}, at most ${MAX_PARALLELISM})
  --seed <n>               corpus seed (default ${WORD_COUNT_DEFAULTS.seed})
  --mode <mode>            streaming (default): the counters read while the sources write;
                           batch: stage by stage over BLOCKING partitions on disk
  --duration <s>           keep the job running at least s seconds: the sources spread the
                           words over that time, so there is time to watch the dashboard
  --throttle <n>           each count subtask reads at most n words/s, which back-pressures the
                           sources; the job message "throttle" (the dashboard's form, or
                           POST /jobs/<id>/messages/throttle) changes or lifts it`;

const COUNT = /^(\d+(?:_\d{3})*|\d+(?:\.\d+)?[km])$/i;

/**
 * Parses a positive count: digits (with optional `_` separators) or a `k`/`m` suffix.
 *
 * @throws ConfigurationError naming the option and the value.
 */
export function parseCount(option: string, text: string, min: number, max: number): number {
  const trimmed = text.trim();
  if (!COUNT.test(trimmed)) {
    throw new ConfigurationError(
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
    throw new ConfigurationError(`${option} expects a whole number, got ${JSON.stringify(text)}`);
  }
  if (value < min || value > max) {
    throw new ConfigurationError(
      `${option} must be between ${min} and ${max.toLocaleString("en-US")}, got ${value}`,
    );
  }
  return value;
}

/**
 * The word count's options from parsed values (the job module's arguments, or the demo's command
 * line).
 *
 * @throws ConfigurationError naming the option and the value.
 */
export function wordCountOptionsOf(values: WordCountArgValues): WordCountOptions {
  const mode = values.mode ?? "streaming";
  if (mode !== "streaming" && mode !== "batch") {
    throw new ConfigurationError(`--mode expects streaming or batch, got ${JSON.stringify(mode)}`);
  }
  const count = (option: keyof WordCountArgValues, min: number, max: number) => {
    const text = values[option];
    return text === undefined ? undefined : parseCount(`--${option}`, text, min, max);
  };
  if (values.output !== undefined && values.output.trim() === "") {
    throw new ConfigurationError('--output expects a folder, got ""');
  }
  return {
    records: count("records", 1, Number.MAX_SAFE_INTEGER) ?? WORD_COUNT_DEFAULTS.records,
    parallelism: count("parallelism", 1, MAX_PARALLELISM) ?? WORD_COUNT_DEFAULTS.parallelism,
    seed: count("seed", 0, 2 ** 32 - 1) ?? WORD_COUNT_DEFAULTS.seed,
    durationSeconds: count("duration", 1, MAX_DURATION_SECONDS),
    mode,
    throttle: count("throttle", 1, Number.MAX_SAFE_INTEGER),
    output: values.output === undefined ? undefined : path.resolve(values.output),
  };
}

/**
 * Parses the job module's arguments (`sluice run word-count-job.js --records 2m ...`).
 *
 * @throws ConfigurationError for an unknown option, a stray argument or a bad value.
 */
export function parseWordCountArgs(args: readonly string[]): WordCountOptions {
  let values: WordCountArgValues;
  try {
    ({ values } = parseArgs({ args: [...args], options: WORD_COUNT_ARGS, strict: true }));
  } catch (error) {
    throw new ConfigurationError(
      `the word count's arguments: ${(error as Error).message}\nIts options:\n${WORD_COUNT_ARGS_HELP}`,
    );
  }
  return wordCountOptionsOf(values);
}

/** `options` as the job module's arguments: what {@link parseWordCountArgs} reads back. */
export function wordCountArgs(options: WordCountOptions): string[] {
  return [
    ["--records", String(options.records)],
    ["--parallelism", String(options.parallelism)],
    ["--seed", String(options.seed)],
    ["--mode", options.mode],
    ...(options.durationSeconds === undefined
      ? []
      : [["--duration", String(options.durationSeconds)]]),
    ...(options.throttle === undefined ? [] : [["--throttle", String(options.throttle)]]),
    ...(options.output === undefined ? [] : [["--output", options.output]]),
  ].flat();
}
