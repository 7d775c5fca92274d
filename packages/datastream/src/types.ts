import {
  BooleanSerializer,
  BytesSerializer,
  type FieldSerializers,
  Float64Serializer,
  Int32Serializer,
  Int64Serializer,
  JsonSerializer,
  ObjectSerializer,
  StringSerializer,
  type TupleFieldSerializers,
  TupleSerializer,
  type TypeSerializer,
} from "@sluice/core";
import { DynamicSerializer } from "./dynamic-serializer.js";

/**
 * The serializers a stream's records can be declared with (Flink's `Types`), for
 * `.returns(...)`, `keyBy(..., { keyType })`, state descriptors and output tags. A declared
 * serializer writes no type tags and is checked by name where a task reads the edge; its
 * TypeScript type must match the stream's (`stream.returns(Types.STRING)` on a stream of numbers
 * does not compile).
 */
export const Types = {
  /** Strings: an int32 byte count and UTF-8 (`string`). */
  STRING: StringSerializer.INSTANCE as TypeSerializer<string>,
  /** Any number, as a float64 (`float64`; Flink's DOUBLE). */
  NUMBER: Float64Serializer.INSTANCE as TypeSerializer<number>,
  /** Integers in int32 range (`int32`; Flink's INT). */
  INT: Int32Serializer.INSTANCE as TypeSerializer<number>,
  /** Bigints in int64 range (`int64`; Flink's LONG). */
  BIGINT: Int64Serializer.INSTANCE as TypeSerializer<bigint>,
  /** Booleans (`boolean`). */
  BOOLEAN: BooleanSerializer.INSTANCE as TypeSerializer<boolean>,
  /** Byte arrays (`bytes`; Flink's PRIMITIVE_ARRAY(BYTE)). */
  BYTES: BytesSerializer.INSTANCE as TypeSerializer<Uint8Array>,
  /** Any value with a type tag per value: the default of a stream that declares none. */
  DYNAMIC: DynamicSerializer.INSTANCE as TypeSerializer<unknown>,
  /** A JSON value as `JSON.stringify` text (`json`). */
  JSON<T>(): TypeSerializer<T> {
    return new JsonSerializer<T>();
  },
  /** A fixed-arity tuple, one serializer per field: `Types.TUPLE(Types.STRING, Types.NUMBER)`. */
  TUPLE<T extends unknown[]>(...fields: TupleFieldSerializers<T>): TypeSerializer<T> {
    return new TupleSerializer<T>(fields);
  },
  /** An object with these fields, in this order: `Types.OBJECT({ word: Types.STRING })`. */
  OBJECT<T extends object>(fields: FieldSerializers<T>): TypeSerializer<T> {
    return new ObjectSerializer<T>(fields);
  },
} as const;

/**
 * The serializer picked for the elements of a source built from an array when none is declared:
 * the one type all of them share (string, number, bigint in int64, boolean, Uint8Array), else
 * the dynamic serializer. Deterministic for the same elements, so every process of a job picks
 * the same.
 */
export function serializerOfElements<T>(elements: readonly T[]): TypeSerializer<T> {
  const pick = (test: (value: unknown) => boolean) => elements.length > 0 && elements.every(test);
  let serializer: TypeSerializer<unknown> = DynamicSerializer.INSTANCE;
  if (pick((value) => typeof value === "string")) serializer = Types.STRING;
  else if (pick((value) => typeof value === "number")) serializer = Types.NUMBER;
  else if (pick((value) => typeof value === "boolean")) serializer = Types.BOOLEAN;
  else if (pick((value) => value instanceof Uint8Array)) serializer = Types.BYTES;
  else if (
    pick((value) => typeof value === "bigint" && value >= -(1n << 63n) && value < 1n << 63n)
  ) {
    serializer = Types.BIGINT;
  }
  return serializer as TypeSerializer<T>;
}
