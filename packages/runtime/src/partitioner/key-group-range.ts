import { IllegalArgumentError } from "@sluice/core";

/**
 * An inclusive range of key groups `[startKeyGroup, endKeyGroup]`: the slice of the key space one
 * parallel operator instance owns, as in Flink's `KeyGroupRange`.
 *
 * `endKeyGroup === startKeyGroup - 1` describes an empty range.
 */
export class KeyGroupRange implements Iterable<number> {
  /** The first key group in the range. */
  readonly startKeyGroup: number;
  /** The last key group in the range (inclusive). */
  readonly endKeyGroup: number;

  /**
   * @throws IllegalArgumentError if either bound is not a non-negative integer (`end` may be
   *   `start - 1` for an empty range) or if `end < start - 1`.
   */
  constructor(startKeyGroup: number, endKeyGroup: number) {
    if (!Number.isInteger(startKeyGroup) || startKeyGroup < 0) {
      throw new IllegalArgumentError(
        `startKeyGroup must be a non-negative integer, got ${startKeyGroup}`,
      );
    }
    if (!Number.isInteger(endKeyGroup) || endKeyGroup < startKeyGroup - 1) {
      throw new IllegalArgumentError(
        `endKeyGroup must be an integer >= startKeyGroup - 1 (${startKeyGroup - 1}), got ${endKeyGroup}`,
      );
    }
    this.startKeyGroup = startKeyGroup;
    this.endKeyGroup = endKeyGroup;
  }

  /** How many key groups the range holds (0 for an empty range). */
  get numberOfKeyGroups(): number {
    return this.endKeyGroup - this.startKeyGroup + 1;
  }

  /** Whether `keyGroup` lies inside the range. */
  contains(keyGroup: number): boolean {
    return keyGroup >= this.startKeyGroup && keyGroup <= this.endKeyGroup;
  }

  /** Yields every key group of the range in ascending order. */
  *[Symbol.iterator](): Iterator<number> {
    for (let keyGroup = this.startKeyGroup; keyGroup <= this.endKeyGroup; keyGroup++) {
      yield keyGroup;
    }
  }

  /** Whether `other` covers exactly the same key groups. */
  equals(other: KeyGroupRange): boolean {
    return this.startKeyGroup === other.startKeyGroup && this.endKeyGroup === other.endKeyGroup;
  }

  /** Renders as `KeyGroupRange{startKeyGroup=0, endKeyGroup=127}`, the form Flink logs. */
  toString(): string {
    return `KeyGroupRange{startKeyGroup=${this.startKeyGroup}, endKeyGroup=${this.endKeyGroup}}`;
  }
}
