import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { murmurHash } from "./murmur-hash.js";
import { expectIllegalArgument } from "./test-support/expect-error.js";

/**
 * An independent reference of Flink's MathUtils.murmurHash(int), written with BigInt arithmetic
 * masked to 32 bits instead of Math.imul/int32 tricks, so it shares no code path with the
 * implementation under test.
 */
const MASK32 = (1n << 32n) - 1n;
const mul32 = (a: bigint, b: bigint): bigint => (a * b) & MASK32;
const rotl32 = (x: bigint, r: bigint): bigint => ((x << r) | (x >> (32n - r))) & MASK32;

function referenceMurmurHash(code: number): number {
  let k = BigInt.asUintN(32, BigInt(code));
  k = mul32(k, 0xcc9e2d51n);
  k = rotl32(k, 15n);
  k = mul32(k, 0x1b873593n);
  let h = 0n ^ k; // seed 0
  h = rotl32(h, 13n);
  h = (h * 5n + 0xe6546b64n) & MASK32;
  h ^= 4n; // length in bytes
  h ^= h >> 16n;
  h = mul32(h, 0x85ebca6bn);
  h ^= h >> 13n;
  h = mul32(h, 0xc2b2ae35n);
  h ^= h >> 16n;
  const signed = BigInt.asIntN(32, h);
  if (signed >= 0n) return Number(signed);
  if (signed !== -(1n << 31n)) return Number(-signed);
  return 0;
}

/**
 * Derived from the reference above; also cross-checked against Guava's
 * Hashing.murmur3_32_fixed().hashInt(code) followed by Flink's sign folding.
 */
const VECTORS: ReadonlyArray<readonly [code: number, hash: number]> = [
  [0, 593689054],
  [1, 68075478], // mixed hash is negative: -68075478
  [-1, 1982413648],
  [42, 1134849565], // mixed hash is negative
  [2147483647, 1653689534], // mixed hash is negative
  [-2147483648, 1718298732], // mixed hash is negative
  [99162322, 1715862179], // "hello".hashCode()
];

/** The one int32 whose mixed hash is exactly Integer.MIN_VALUE (found by inverting the rounds). */
const MIN_VALUE_PREIMAGE = -2089875627;

describe("murmurHash", () => {
  it("the BigInt reference reproduces the fixed vectors", () => {
    for (const [code, hash] of VECTORS) expect(referenceMurmurHash(code)).toBe(hash);
  });

  it.each(VECTORS)("hashes %i to the Flink value %i", (code, hash) => {
    expect(murmurHash(code)).toBe(hash);
  });

  it("agrees with the BigInt reference on random int32 codes and is never negative", () => {
    fc.assert(
      fc.property(fc.integer({ min: -2147483648, max: 2147483647 }), (code) => {
        const hash = murmurHash(code);
        expect(hash).toBe(referenceMurmurHash(code));
        expect(hash).toBeGreaterThanOrEqual(0);
      }),
      { numRuns: 5000, seed: 20240607 },
    );
  });

  it("maps the code whose mixed hash is Integer.MIN_VALUE to 0 instead of overflowing", () => {
    expect(referenceMurmurHash(MIN_VALUE_PREIMAGE)).toBe(0);
    expect(murmurHash(MIN_VALUE_PREIMAGE)).toBe(0);
  });

  it("treats -0 like 0", () => {
    expect(murmurHash(-0)).toBe(593689054);
  });

  it.each([1.5, 2147483648, -2147483649, Number.NaN, Number.POSITIVE_INFINITY])(
    "rejects %d, which is not an int32, instead of truncating it",
    (code) => {
      expectIllegalArgument(() => murmurHash(code), "int32", String(code));
    },
  );
});
