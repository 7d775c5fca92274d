import { IllegalArgumentError } from "@sluice/core";

/**
 * Memory size units Flink's `MemorySize` accepts, all binary (1 kb = 1024 bytes), matched
 * case-insensitively. A number without unit is a number of bytes.
 */
const MEMORY_UNITS: ReadonlyMap<string, number> = new Map([
  ["", 1],
  ["b", 1],
  ["bytes", 1],
  ["k", 1024],
  ["kb", 1024],
  ["kibibytes", 1024],
  ["m", 1024 ** 2],
  ["mb", 1024 ** 2],
  ["mebibytes", 1024 ** 2],
  ["g", 1024 ** 3],
  ["gb", 1024 ** 3],
  ["gibibytes", 1024 ** 3],
  ["t", 1024 ** 4],
  ["tb", 1024 ** 4],
  ["tebibytes", 1024 ** 4],
]);

/** Human-readable list of the accepted memory units, for error messages and docs. */
export const MEMORY_SIZE_SYNTAX =
  "a whole number of bytes, optionally followed by a unit: b, k/kb, m/mb, g/gb, t/tb " +
  "(binary, case-insensitive), e.g. 32kb, 64 mb, 1gb or 1048576";

const MEMORY_PATTERN = /^\s*(\d+)\s*([a-z]*)\s*$/i;

/**
 * Parses a memory size such as `64mb`, `32 kb`, `1GB` or `1048576` into a number of bytes, or
 * returns `undefined` when the text is not a memory size or exceeds `Number.MAX_SAFE_INTEGER`.
 */
export function tryParseMemorySize(text: string): number | undefined {
  const match = MEMORY_PATTERN.exec(text);
  if (match === null) return undefined;
  const multiplier = MEMORY_UNITS.get((match[2] ?? "").toLowerCase());
  if (multiplier === undefined) return undefined;
  const bytes = Number(match[1]) * multiplier;
  return Number.isSafeInteger(bytes) ? bytes : undefined;
}

/**
 * Parses a memory size such as `64mb`, `32 kb`, `1GB` or `1048576` (bytes) into a number of bytes.
 * Units are Flink's (b, k/kb, m/mb, g/gb, t/tb; binary; case-insensitive).
 *
 * @throws IllegalArgumentError (`SLUICE_ERR_INVALID_ARGUMENT`) when `text` is not a memory size.
 */
export function parseMemorySize(text: string): number {
  const bytes = tryParseMemorySize(text);
  if (bytes === undefined) {
    throw new IllegalArgumentError(
      `${JSON.stringify(text)} is not a memory size: expected ${MEMORY_SIZE_SYNTAX}`,
    );
  }
  return bytes;
}

/**
 * Formats a number of bytes with the largest unit that divides it exactly, the way Flink's
 * documentation prints defaults: `65536 → "64 kb"`, `100 → "100 bytes"`. The output parses back to
 * the same number with {@link parseMemorySize}.
 */
export function formatMemorySize(bytes: number): string {
  const units: [string, number][] = [
    ["tb", 1024 ** 4],
    ["gb", 1024 ** 3],
    ["mb", 1024 ** 2],
    ["kb", 1024],
  ];
  if (bytes > 0) {
    for (const [unit, size] of units) {
      if (bytes % size === 0) return `${bytes / size} ${unit}`;
    }
  }
  return `${bytes} bytes`;
}
