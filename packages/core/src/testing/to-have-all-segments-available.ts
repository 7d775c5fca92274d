import { expect } from "vitest";

/** What the matcher reads: a NetworkBufferPool, or anything that counts segments the same way. */
export interface SegmentCounting {
  /** Segments in the pool now. */
  getNumberOfAvailableMemorySegments(): number;
  /** Segments the pool was made with. */
  readonly totalNumberOfMemorySegments: number;
}

function isSegmentCounting(value: unknown): value is SegmentCounting {
  return (
    typeof value === "object" &&
    value !== null &&
    typeof (value as SegmentCounting).getNumberOfAvailableMemorySegments === "function" &&
    typeof (value as SegmentCounting).totalNumberOfMemorySegments === "number"
  );
}

interface SegmentMatchers<R = unknown> {
  /**
   * Asserts that every segment of a NetworkBufferPool is back in it (available = total): nothing
   * leaked, nothing is still held by a channel, a partition or a pending write. The failure
   * message shows available / total and how many are missing.
   */
  toHaveAllSegmentsAvailable(): R;
}

declare module "vitest" {
  // biome-ignore lint/suspicious/noExplicitAny: must match vitest's own declaration of Matchers.
  interface Matchers<T = any> extends SegmentMatchers<T> {}
}

/**
 * The matcher behind `expect(pool).toHaveAllSegmentsAvailable()`; registered with `expect.extend`
 * when `@sluice/core/testing` is imported.
 */
export function toHaveAllSegmentsAvailable(
  this: { isNot: boolean },
  received: unknown,
): { pass: boolean; message: () => string; actual?: unknown; expected?: unknown } {
  if (!isSegmentCounting(received)) {
    return {
      pass: false,
      message: () =>
        "toHaveAllSegmentsAvailable expects a NetworkBufferPool (getNumberOfAvailableMemorySegments() and totalNumberOfMemorySegments)",
    };
  }
  const available = received.getNumberOfAvailableMemorySegments();
  const total = received.totalNumberOfMemorySegments;
  return {
    pass: available === total,
    message: () =>
      this.isNot
        ? `expected some segments to be in use, but all ${total} are available`
        : `expected every segment back in its pool: ${available} of ${total} available (${total - available} missing)`,
    actual: available,
    expected: total,
  };
}

expect.extend({ toHaveAllSegmentsAvailable });
