import { assignKeyToParallelOperator } from "@sluice/runtime";
import { formatInteger } from "./format.js";

/** The outcome of comparing the job's counts with the reference. */
export interface Verification {
  readonly verified: boolean;
  /** The first differences, as sentences (at most `maxDifferences`). */
  readonly differences: readonly string[];
  /** Distinct words in the reference. */
  readonly distinctWords: number;
}

/**
 * Checks the counters' results against the reference counts: every word counted exactly as
 * often as the corpus contains it, and only by the count subtask that owns the word's key group
 * (a misrouted record would otherwise go unnoticed when the totals still add up).
 *
 * @param countsBySubtask the counts of count subtask i at index i.
 */
export function verifyCounts(
  reference: ReadonlyMap<string, number>,
  countsBySubtask: readonly ReadonlyMap<string, number>[],
  maxParallelism: number,
  maxDifferences = 10,
): Verification {
  return compareCounts(reference, countsBySubtask, maxParallelism, maxDifferences, "exactly");
}

/** The outcome of an at-least-once comparison: no word lost, and how many were counted twice. */
export interface AtLeastOnceVerification extends Verification {
  /** Words counted more often than the corpus holds them, summed over all words. */
  readonly duplicates: number;
}

/**
 * Checks the counters' results of an at-least-once run: every word counted at least as often as
 * the corpus contains it (none lost), only by the count subtask that owns its key group. Words
 * counted more often (replayed after a restore) are no difference; their excess is `duplicates`.
 */
export function verifyAtLeastOnce(
  reference: ReadonlyMap<string, number>,
  countsBySubtask: readonly ReadonlyMap<string, number>[],
  maxParallelism: number,
  maxDifferences = 10,
): AtLeastOnceVerification {
  const verification = compareCounts(
    reference,
    countsBySubtask,
    maxParallelism,
    maxDifferences,
    "at-least",
  );
  let duplicates = 0;
  const merged = new Map<string, number>();
  for (const counts of countsBySubtask) {
    for (const [word, count] of counts) merged.set(word, (merged.get(word) ?? 0) + count);
  }
  for (const [word, expected] of reference) {
    duplicates += Math.max(0, (merged.get(word) ?? 0) - expected);
  }
  return { ...verification, duplicates };
}

function compareCounts(
  reference: ReadonlyMap<string, number>,
  countsBySubtask: readonly ReadonlyMap<string, number>[],
  maxParallelism: number,
  maxDifferences: number,
  expectation: "exactly" | "at-least",
): Verification {
  const differences: string[] = [];
  let more = 0;
  const note = (text: string) => {
    if (differences.length < maxDifferences) differences.push(text);
    else more++;
  };
  const parallelism = countsBySubtask.length;
  const merged = new Map<string, number>();
  countsBySubtask.forEach((counts, subtask) => {
    for (const [word, count] of counts) {
      const owner = assignKeyToParallelOperator(word, maxParallelism, parallelism);
      if (owner !== subtask) {
        note(
          `"${word}" was counted by count subtask ${subtask + 1}, but its key group belongs to subtask ${owner + 1}`,
        );
      }
      merged.set(word, (merged.get(word) ?? 0) + count);
    }
  });
  for (const [word, expected] of reference) {
    const actual = merged.get(word) ?? 0;
    if (actual < expected || (expectation === "exactly" && actual > expected)) {
      note(
        `"${word}": expected ${formatInteger(expected)}, counted ${formatInteger(actual)} (${actual > expected ? "+" : ""}${formatInteger(actual - expected)})`,
      );
    }
  }
  for (const [word, actual] of merged) {
    if (!reference.has(word))
      note(`"${word}": not in the corpus, counted ${formatInteger(actual)}`);
  }
  if (more > 0) differences.push(`... and ${formatInteger(more)} more`);
  return { verified: differences.length === 0, differences, distinctWords: reference.size };
}
