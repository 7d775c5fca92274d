import {
  type DataInputDeserializer,
  type DataOutputSerializer,
  describeValue,
  IllegalArgumentError,
  SerializationError,
  type TypeSerializer,
  typeName,
} from "@sluice/core";

/** The one-byte tag in front of each value (docs/first-job.md, "Records and their serializers"). */
const Tag = {
  NULL: 0,
  UNDEFINED: 1,
  FALSE: 2,
  TRUE: 3,
  INT32: 4,
  FLOAT64: 5,
  STRING: 6,
  INT64: 7,
  BIGINT: 8,
  BYTES: 9,
  ARRAY: 10,
  OBJECT: 11,
} as const;

/** Nesting beyond this is refused (a cycle would otherwise overflow the stack). */
const MAX_DEPTH = 256;

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;

/**
 * The serializer of a stream whose type was not declared (the role of Flink's generic type
 * fallback): each value is written with a one-byte type tag, so any value of the types a record
 * of a typed job usually is goes through — numbers (int32 in 4 bytes, others as float64),
 * strings, bigints, booleans, `null`, `undefined`, `Uint8Array`s, arrays (tuples) and plain
 * objects of these, nested. It reads back an equal value (a `Buffer` comes back as a
 * `Uint8Array`, `-0` as `-0`).
 *
 * A value of another type (a `Map`, a `Date`, a class instance, a function) is refused with an
 * IllegalArgumentError naming it: declare the stream's serializer (`.returns(...)`).
 */
export class DynamicSerializer implements TypeSerializer<unknown> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new DynamicSerializer();
  /** `dynamic`: the name tasks resolve it by. */
  readonly name = "dynamic";

  /** Writes `value` behind its type tag; throws IllegalArgumentError for a type it cannot write. */
  serialize(value: unknown, out: DataOutputSerializer): void {
    write(value, out, 0);
  }

  /** Reads one tagged value; throws SerializationError for an unknown tag or a bad count. */
  deserialize(input: DataInputDeserializer): unknown {
    return read(input, 0);
  }
}

function write(value: unknown, out: DataOutputSerializer, depth: number): void {
  switch (typeof value) {
    case "string":
      out.writeByte(Tag.STRING);
      out.writeString(value);
      return;
    case "number":
      if ((value | 0) === value && !Object.is(value, -0)) {
        out.writeByte(Tag.INT32);
        out.writeInt(value);
      } else {
        out.writeByte(Tag.FLOAT64);
        out.writeDouble(value);
      }
      return;
    case "boolean":
      out.writeByte(value ? Tag.TRUE : Tag.FALSE);
      return;
    case "undefined":
      out.writeByte(Tag.UNDEFINED);
      return;
    case "bigint":
      if (value >= INT64_MIN && value <= INT64_MAX) {
        out.writeByte(Tag.INT64);
        out.writeLong(value);
      } else {
        writeBigInt(value, out);
      }
      return;
    case "object":
      writeObject(value, out, depth);
      return;
  }
  throw unsupported(value);
}

function writeObject(value: object | null, out: DataOutputSerializer, depth: number): void {
  if (value === null) {
    out.writeByte(Tag.NULL);
    return;
  }
  if (depth >= MAX_DEPTH) {
    throw new IllegalArgumentError(
      `the dynamic serializer cannot write a value nested deeper than ${MAX_DEPTH} levels (is it cyclic?)`,
    );
  }
  if (value instanceof Uint8Array) {
    out.writeByte(Tag.BYTES);
    out.writeInt(value.length);
    out.writeBytes(value);
    return;
  }
  if (Array.isArray(value)) {
    out.writeByte(Tag.ARRAY);
    out.writeInt(value.length);
    for (const element of value) write(element, out, depth + 1);
    return;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) throw unsupported(value);
  const keys = Object.keys(value);
  out.writeByte(Tag.OBJECT);
  out.writeInt(keys.length);
  for (const key of keys) {
    out.writeString(key);
    write((value as Record<string, unknown>)[key], out, depth + 1);
  }
}

/** A bigint beyond int64: sign, then the magnitude's bytes, big-endian. */
function writeBigInt(value: bigint, out: DataOutputSerializer): void {
  const negative = value < 0n;
  let hex = (negative ? -value : value).toString(16);
  if (hex.length % 2 === 1) hex = `0${hex}`;
  const bytes = Buffer.from(hex, "hex");
  out.writeByte(Tag.BIGINT);
  out.writeBoolean(negative);
  out.writeInt(bytes.length);
  out.writeBytes(bytes);
}

function read(input: DataInputDeserializer, depth: number): unknown {
  const at = input.position;
  const tag = input.readUnsignedByte();
  switch (tag) {
    case Tag.NULL:
      return null;
    case Tag.UNDEFINED:
      return undefined;
    case Tag.FALSE:
      return false;
    case Tag.TRUE:
      return true;
    case Tag.INT32:
      return input.readInt();
    case Tag.FLOAT64:
      return input.readDouble();
    case Tag.STRING:
      return input.readString();
    case Tag.INT64:
      return input.readLong();
    case Tag.BIGINT: {
      const negative = input.readBoolean();
      const bytes = input.readFully(count(input, at, "bigint bytes"));
      const magnitude = bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes).toString("hex")}`);
      return negative ? -magnitude : magnitude;
    }
    case Tag.BYTES:
      // A copy: what readFully returns is a view of the network buffer, recycled after the record.
      return new Uint8Array(input.readFully(count(input, at, "bytes")));
    case Tag.ARRAY: {
      checkDepth(depth, at);
      const length = count(input, at, "array elements");
      const array = new Array<unknown>(length);
      for (let i = 0; i < length; i++) array[i] = read(input, depth + 1);
      return array;
    }
    case Tag.OBJECT: {
      checkDepth(depth, at);
      const size = count(input, at, "object fields");
      const object: Record<string, unknown> = {};
      for (let i = 0; i < size; i++) {
        const key = input.readString();
        // defineProperty: a field named "__proto__" is a field, not the prototype.
        Object.defineProperty(object, key, {
          value: read(input, depth + 1),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      }
      return object;
    }
  }
  throw new SerializationError(`dynamic serializer: unknown type tag ${tag} at position ${at}`);
}

/** An int32 count read off the input, at most the bytes left (each item takes at least one). */
function count(input: DataInputDeserializer, at: number, what: string): number {
  const n = input.readInt();
  if (n < 0 || n > input.available()) {
    throw new SerializationError(
      `dynamic serializer: ${n} ${what} at position ${at} with ${input.available()} bytes left`,
    );
  }
  return n;
}

function checkDepth(depth: number, at: number): void {
  if (depth >= MAX_DEPTH) {
    throw new SerializationError(
      `dynamic serializer: a value at position ${at} is nested deeper than ${MAX_DEPTH} levels`,
    );
  }
}

function unsupported(value: unknown): IllegalArgumentError {
  return new IllegalArgumentError(
    `the dynamic serializer cannot write ${describeValue(value)} (a ${typeName(value)}): it writes numbers, strings, bigints, booleans, null, undefined, Uint8Arrays, arrays and plain objects of these; declare the stream's serializer with .returns(...)`,
  );
}
