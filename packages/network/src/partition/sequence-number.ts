/**
 * Sequence numbers of subpartition views (every buffer or event a view hands out, and what a
 * remote channel expects next) are Java ints in Flink: they count from 0, overflow from 2³¹−1
 * to −2³¹ and go on, on the producer and the consumer alike, and every comparison looks at the
 * sign of the 32-bit difference. These helpers keep that arithmetic in one place, so a channel
 * that carries more than 2³¹ buffers goes on exactly as before the wrap.
 */

/** The sequence number after `sequenceNumber`: +1 in int32 arithmetic (2³¹−1 → −2³¹). */
export function nextSequenceNumber(sequenceNumber: number): number {
  return (sequenceNumber + 1) | 0;
}

/**
 * Whether `a` comes before `b`, across the wrap (as Flink compares them: `a - b < 0` in int32).
 * Holds for numbers less than 2³¹ apart, which the queues of one channel always are.
 */
export function sequenceNumberPrecedes(a: number, b: number): boolean {
  return ((a - b) | 0) < 0;
}
