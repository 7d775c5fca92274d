import { IllegalArgumentError } from "@sluice/core";

/**
 * Duration units Flink's `TimeUtils` accepts (singular and plural, case-insensitive), as a factor to
 * milliseconds. A number without unit is a number of milliseconds.
 */
const DURATION_UNITS: ReadonlyMap<string, number> = (() => {
  const units = new Map<string, number>([["", 1]]);
  const add = (factor: number, ...labels: string[]) => {
    for (const label of labels) units.set(label, factor);
  };
  add(1e-6, "ns", "nano", "nanos", "nanosecond", "nanoseconds");
  add(1e-3, "µs", "us", "micro", "micros", "microsecond", "microseconds");
  add(1, "ms", "milli", "millis", "millisecond", "milliseconds");
  add(1000, "s", "sec", "secs", "second", "seconds");
  add(60_000, "m", "min", "mins", "minute", "minutes");
  add(3_600_000, "h", "hour", "hours");
  add(86_400_000, "d", "day", "days");
  return units;
})();

/** Human-readable description of the duration syntax, for error messages and docs. */
export const DURATION_SYNTAX =
  "a whole number of milliseconds, optionally followed by a unit: ns, us, ms, s, min (or m), h, d " +
  "(case-insensitive, long forms like 'seconds' accepted), e.g. 100ms, 10 s, 2min or 250";

const DURATION_PATTERN = /^\s*(\d+)\s*([a-zµ]*)\s*$/i;

/**
 * Parses a duration such as `100ms`, `10 s`, `1 min`, `2h` or `250` (milliseconds) into
 * milliseconds, or returns `undefined` when the text is not a duration. Sub-millisecond units give
 * fractional milliseconds.
 */
export function tryParseDuration(text: string): number | undefined {
  const match = DURATION_PATTERN.exec(text);
  if (match === null) return undefined;
  const factor = DURATION_UNITS.get((match[2] ?? "").toLowerCase());
  if (factor === undefined) return undefined;
  const ms = Number(match[1]) * factor;
  return Number.isFinite(ms) && ms <= Number.MAX_SAFE_INTEGER ? ms : undefined;
}

/**
 * Parses a duration such as `100ms`, `10 s`, `1 min`, `2h` or `250` into milliseconds. A plain
 * number means milliseconds.
 *
 * @throws IllegalArgumentError (`SLUICE_ERR_INVALID_ARGUMENT`) when `text` is not a duration.
 */
export function parseDuration(text: string): number {
  const ms = tryParseDuration(text);
  if (ms === undefined) {
    throw new IllegalArgumentError(
      `${JSON.stringify(text)} is not a duration: expected ${DURATION_SYNTAX}`,
    );
  }
  return ms;
}

/**
 * Formats milliseconds with the largest unit that divides them exactly: `100 → "100 ms"`,
 * `120000 → "2 min"`, `10000 → "10 s"`. The output parses back with {@link parseDuration}.
 */
export function formatDuration(ms: number): string {
  const units: [string, number][] = [
    ["d", 86_400_000],
    ["h", 3_600_000],
    ["min", 60_000],
    ["s", 1000],
  ];
  if (ms > 0 && Number.isInteger(ms)) {
    for (const [unit, size] of units) {
      if (ms % size === 0) return `${ms / size} ${unit}`;
    }
  }
  return `${ms} ms`;
}
