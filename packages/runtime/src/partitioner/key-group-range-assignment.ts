import { IllegalArgumentError } from "@sluice/core";
import { UPPER_BOUND_MAX_PARALLELISM } from "@sluice/runtime-api";
import { hashCodeOf } from "./hash-code.js";
import { KeyGroupRange } from "./key-group-range.js";
import { murmurHash } from "./murmur-hash.js";

/**
 * The smallest max parallelism {@link computeDefaultMaxParallelism} picks, so that a job started
 * with a small parallelism can still be scaled out later without reshuffling its state.
 */
export const DEFAULT_LOWER_BOUND_MAX_PARALLELISM = 128;

/**
 * Picks Flink's default max parallelism (number of key groups) for an operator with the given
 * parallelism: 1.5 × parallelism (integer division) rounded up to a power of two, at least 128 and
 * at most 32768. The headroom lets the job be rescaled later.
 *
 * @throws IllegalArgumentError if `parallelism` is not an integer in `[1, 32768]`.
 */
export function computeDefaultMaxParallelism(parallelism: number): number {
  checkRange("parallelism", parallelism, 1, UPPER_BOUND_MAX_PARALLELISM);
  const withHeadroom = roundUpToPowerOfTwo(parallelism + Math.floor(parallelism / 2));
  return Math.min(
    Math.max(withHeadroom, DEFAULT_LOWER_BOUND_MAX_PARALLELISM),
    UPPER_BOUND_MAX_PARALLELISM,
  );
}

/**
 * Assigns a key to its key group: `murmurHash(hashCodeOf(key)) % maxParallelism`. Equal keys always
 * get the same key group, and the same one Flink assigns to the equal Java key.
 *
 * @throws IllegalArgumentError if `maxParallelism` is not an integer in `[1, 32768]`, or if the key
 *   has no hash code (see {@link hashCodeOf}).
 */
export function assignToKeyGroup(key: unknown, maxParallelism: number): number {
  checkMaxParallelism(maxParallelism);
  return murmurHash(hashCodeOf(key)) % maxParallelism;
}

/**
 * Assigns a key's int32 hash code to its key group, for callers that already hold `hashCode()`.
 *
 * @throws IllegalArgumentError if `keyHash` is not an int32 or `maxParallelism` is out of range.
 */
export function computeKeyGroupForKeyHash(keyHash: number, maxParallelism: number): number {
  checkMaxParallelism(maxParallelism);
  return murmurHash(keyHash) % maxParallelism;
}

/**
 * Finds the operator instance that owns a key group: `floor(keyGroup × parallelism / maxParallelism)`.
 * This splits the key groups into contiguous ranges, so rescaling moves whole ranges of state.
 *
 * @throws IllegalArgumentError unless `1 <= parallelism <= maxParallelism <= 32768` and
 *   `0 <= keyGroup < maxParallelism`, all integers.
 */
export function computeOperatorIndexForKeyGroup(
  maxParallelism: number,
  parallelism: number,
  keyGroup: number,
): number {
  checkParallelisms(maxParallelism, parallelism);
  checkRange("keyGroup", keyGroup, 0, maxParallelism - 1);
  // keyGroup × parallelism < 2^30, so the product and the division are exact in a double.
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

/**
 * The key groups owned by operator instance `operatorIndex`:
 * `[ceil(i × maxP / p), floor(((i + 1) × maxP − 1) / p)]`. It is the exact inverse of
 * {@link computeOperatorIndexForKeyGroup}: the ranges of all instances are non-empty, disjoint and
 * cover `[0, maxParallelism)`.
 *
 * @throws IllegalArgumentError unless `1 <= parallelism <= maxParallelism <= 32768` and
 *   `0 <= operatorIndex < parallelism`, all integers.
 */
export function computeKeyGroupRangeForOperatorIndex(
  maxParallelism: number,
  parallelism: number,
  operatorIndex: number,
): KeyGroupRange {
  checkParallelisms(maxParallelism, parallelism);
  checkRange("operatorIndex", operatorIndex, 0, parallelism - 1);
  const start = Math.ceil((operatorIndex * maxParallelism) / parallelism);
  const end = Math.floor(((operatorIndex + 1) * maxParallelism - 1) / parallelism);
  return new KeyGroupRange(start, end);
}

/**
 * Finds the operator instance a key is routed to: the owner of the key's key group.
 *
 * @throws IllegalArgumentError as {@link assignToKeyGroup} and {@link computeOperatorIndexForKeyGroup}.
 */
export function assignKeyToParallelOperator(
  key: unknown,
  maxParallelism: number,
  parallelism: number,
): number {
  return computeOperatorIndexForKeyGroup(
    maxParallelism,
    parallelism,
    assignToKeyGroup(key, maxParallelism),
  );
}

/**
 * Checks `1 <= parallelism <= maxParallelism <= 32768`: with more instances than key groups some
 * instances would own no key group at all.
 */
export function checkParallelisms(maxParallelism: number, parallelism: number): void {
  checkMaxParallelism(maxParallelism);
  checkRange("parallelism", parallelism, 1, maxParallelism);
}

/** Checks that `maxParallelism` is an integer in `[1, 32768]`. */
export function checkMaxParallelism(maxParallelism: number): void {
  checkRange("maxParallelism", maxParallelism, 1, UPPER_BOUND_MAX_PARALLELISM);
}

function checkRange(name: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new IllegalArgumentError(`${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
}

/** Smallest power of two >= x, for 1 <= x <= 2^30. */
function roundUpToPowerOfTwo(x: number): number {
  let v = x - 1;
  v |= v >>> 1;
  v |= v >>> 2;
  v |= v >>> 4;
  v |= v >>> 8;
  v |= v >>> 16;
  return v + 1;
}
