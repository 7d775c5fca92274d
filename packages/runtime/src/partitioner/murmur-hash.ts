import { IllegalArgumentError } from "@sluice/core";

const INT32_MIN = -2147483648;

/**
 * Scrambles a 32-bit hash code exactly as Flink's `MathUtils.murmurHash(int)` does, so that a key
 * lands in the same key group in Sluice as in Flink.
 *
 * This is one MurmurHash3 (x86, 32-bit) block round over the single int with seed 0, followed by the
 * length mix (4 bytes) and the `fmix32` finaliser. Flink then folds the signed result to a
 * non-negative int: negative values are negated, and `Integer.MIN_VALUE` (whose negation overflows)
 * becomes 0. Key-group assignment relies on the result being non-negative because it takes `%`.
 *
 * @param code - an int32 hash code, typically from {@link hashCodeOf}.
 * @returns a value in `[0, 2^31 - 1]`.
 * @throws IllegalArgumentError if `code` is not an int32 (a fractional, out-of-range or NaN value
 *   would otherwise be truncated silently and send unrelated keys to the same key group).
 */
export function murmurHash(code: number): number {
  if ((code | 0) !== code) {
    throw new IllegalArgumentError(`murmurHash expects an int32 hash code, got ${code}`);
  }
  return murmurHashOfInt32(code);
}

/**
 * {@link murmurHash} without the int32 check, for callers whose `code` is an int32 by
 * construction (every result of `hashCodeOf` is): key-group routing calls this once per record.
 *
 * @param code - an int32; anything else gives an unspecified result.
 * @returns a value in `[0, 2^31 - 1]`.
 */
export function murmurHashOfInt32(code: number): number {
  // Math.imul and the shifts keep every step in int32, matching Java's wrapping int arithmetic;
  // a plain `*` would lose low bits once the product exceeds 2^53.
  let k = Math.imul(code, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  k = Math.imul(k, 0x1b873593);

  // The seed is 0, so `h = seed ^ k` is just `k`.
  let h = (k << 13) | (k >>> 19);
  h = (Math.imul(h, 5) + 0xe6546b64) | 0;

  // Murmur3 mixes in the input length in bytes: one int is 4.
  h ^= 4;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;

  if (h >= 0) return h;
  // -MIN_VALUE overflows back to MIN_VALUE in Java; Flink maps it to 0 instead.
  return h !== INT32_MIN ? -h : 0;
}
