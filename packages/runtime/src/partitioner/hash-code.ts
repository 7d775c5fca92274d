import { describeValue, IllegalArgumentError, typeName } from "@sluice/core";

/**
 * A key that computes its own hash code, like a Java object overriding `hashCode()`.
 *
 * Keys that are equal must return the same value, and the value must be an int32 (wrap with `| 0`
 * or `Math.imul` when combining fields). To land in the same key group as the equivalent Flink key,
 * return what the Java class's `hashCode()` returns.
 */
export interface Hashable {
  /** Returns an int32 hash code that is equal for equal keys. */
  hashCode(): number;
}

/** Java's hash codes for `Boolean.TRUE` and `Boolean.FALSE`. */
const TRUE_HASH = 1231;
const FALSE_HASH = 1237;

/**
 * `Double.hashCode(NaN)`: Java hashes the canonical NaN bit pattern 0x7ff8000000000000, whatever the
 * payload, so every NaN must hash alike here too even if an engine writes another payload.
 */
const NAN_HASH = 0x7ff80000;

// Scratch space for reading a double's bits, shared safely: the read below never yields, and each
// worker thread loads its own copy of this module.
const doubleBits = new DataView(new ArrayBuffer(8));

/**
 * Computes the Java-compatible `hashCode()` of a key, so that `murmurHash(hashCodeOf(key))` puts a key
 * in the same key group as Flink puts the equal Java key.
 *
 * | key | Java equivalent |
 * | --- | --- |
 * | object with a `hashCode()` method | that method (must return an int32) |
 * | string | `String.hashCode()` over UTF-16 code units |
 * | integer number in int32 range | `Integer.hashCode()` (the value; `-0` counts as `0` since `-0 === 0`) |
 * | any other number (fractional, beyond int32, NaN, ±Infinity) | `Double.hashCode()` |
 * | bigint in int64 range | `Long.hashCode()` |
 * | boolean | `Boolean.hashCode()` (1231 / 1237) |
 * | `Uint8Array` / `Int8Array` (incl. `Buffer`) | `Arrays.hashCode(byte[])` over signed bytes |
 * | array | `Arrays.deepHashCode(Object[])`, i.e. `List.hashCode()` (see below) |
 *
 * Arrays combine their elements' hash codes as `31 * h + element`, starting from 1; `null` and
 * `undefined` elements count as 0, and nested arrays are hashed by content, not identity.
 *
 * A JavaScript number has no Java type of its own; int32 integers are treated as `int` because that is
 * the usual Java key type. Pass a bigint for a value that is a `long` on the Java side.
 *
 * @throws IllegalArgumentError for `null`, `undefined`, a bigint outside int64, a `hashCode()` that
 *   does not return an int32, or any other type (symbols, functions, plain objects, maps, ...),
 *   naming the type it saw.
 */
export function hashCodeOf(key: unknown): number {
  switch (typeof key) {
    case "string":
      return stringHashCode(key);
    case "number":
      return numberHashCode(key);
    case "bigint":
      return longHashCode(key);
    case "boolean":
      return key ? TRUE_HASH : FALSE_HASH;
    case "object":
      if (key !== null) return objectHashCode(key);
      break;
  }
  throw unsupportedKey(key);
}

function stringHashCode(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) {
    // charCodeAt yields UTF-16 code units, which is what a Java `char` is.
    h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  }
  return h;
}

function numberHashCode(n: number): number {
  // `n | 0` also normalises -0 to 0: the two compare equal in JavaScript, so they must hash alike.
  if ((n | 0) === n) return n | 0;
  if (Number.isNaN(n)) return NAN_HASH;
  doubleBits.setFloat64(0, n);
  return doubleBits.getInt32(0) ^ doubleBits.getInt32(4);
}

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

function longHashCode(v: bigint): number {
  if (v < INT64_MIN || v > INT64_MAX) {
    throw new IllegalArgumentError(
      `cannot hash bigint key ${v}n: it is outside the int64 range that Java's Long.hashCode() covers`,
    );
  }
  // Java: (int) (value ^ (value >>> 32)). The unsigned view makes `>>` behave like `>>>`.
  const unsigned = BigInt.asUintN(64, v);
  return Number(BigInt.asIntN(32, unsigned ^ (unsigned >> 32n)));
}

function objectHashCode(key: object): number {
  const hashCode = (key as Partial<Hashable>).hashCode;
  if (typeof hashCode === "function") {
    const h: unknown = hashCode.call(key);
    if (typeof h !== "number" || (h | 0) !== h) {
      throw new IllegalArgumentError(
        `hashCode() of a key of type ${typeName(key)} must return an int32, got ${describeValue(h)}`,
      );
    }
    return h;
  }
  if (key instanceof Uint8Array || key instanceof Int8Array) {
    let h = 1;
    for (let i = 0; i < key.length; i++) {
      // Java bytes are signed: sign-extend the low 8 bits.
      h = (Math.imul(h, 31) + (((key[i] as number) << 24) >> 24)) | 0;
    }
    return h;
  }
  if (Array.isArray(key)) {
    let h = 1;
    for (const element of key as readonly unknown[]) {
      h = (Math.imul(h, 31) + (element == null ? 0 : hashCodeOf(element))) | 0;
    }
    return h;
  }
  throw unsupportedKey(key);
}

function unsupportedKey(key: unknown): IllegalArgumentError {
  return new IllegalArgumentError(
    `cannot compute a hash code for a key of type ${typeName(key)}: use a string, number, bigint, ` +
      "boolean, Uint8Array, array of those, or an object with a hashCode(): number method",
  );
}
