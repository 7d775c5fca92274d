import { describeValue, IllegalStateError } from "@sluice/core";

/**
 * A source of uniformly distributed numbers in `[0, 1)`, with the contract of `Math.random`.
 * Randomised partitioners take one so tests can inject a seeded generator.
 */
export type RandomSource = () => number;

/**
 * Draws a channel index uniformly from `[0, numberOfChannels)`.
 *
 * @throws IllegalStateError if the source returns a value outside `[0, 1)`, which would otherwise
 *   yield a channel index out of range.
 */
export function randomChannel(random: RandomSource, numberOfChannels: number): number {
  const r = random();
  if (!(r >= 0 && r < 1)) {
    throw new IllegalStateError(
      `random source must return a number in [0, 1), got ${describeValue(r)}`,
    );
  }
  return Math.floor(r * numberOfChannels);
}
