import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";

/**
 * Turns values of type `T` into bytes and back (Flink's TypeSerializer, reduced to what the
 * network stack needs). A record's payload is whatever `serialize` writes; the record framing
 * (int32 length) is added around it by `serializeRecord`, so a serializer never writes its own
 * total length.
 *
 * Contract:
 * - `serialize` validates `value` and throws {@link IllegalArgumentError} (naming the value) for
 *   one it cannot represent, rather than writing something that decodes differently.
 * - `deserialize` reads exactly the bytes `serialize` wrote for the value; the record
 *   deserializer treats leftover or missing bytes as corruption. Input errors surface as
 *   {@link SerializationError}.
 * - `deserialize` returns a value that does not alias `input`'s bytes (they belong to a network
 *   buffer that is recycled right after).
 * - Implementations are stateless, so one instance may be shared by every channel.
 */
export interface TypeSerializer<T> {
  /** A short name for error messages, e.g. `"int32"` or `"tuple<string,int64>"`. */
  readonly name: string;
  /** Writes `value` to `out`. */
  serialize(value: T, out: DataOutputSerializer): void;
  /** Reads one value from `input`. */
  deserialize(input: DataInputDeserializer): T;
  /**
   * Optional: reads one value into `reuse` and returns it (or a new value when `reuse` cannot
   * hold it), as Flink's `deserialize(reuse, source)`. Readers that keep one object per loop use
   * it to decode without allocating per record. The same byte contract as `deserialize` holds;
   * only the result may now be an object the caller owns and overwrites on the next record.
   */
  deserializeInto?(reuse: T, input: DataInputDeserializer): T;
  /**
   * Optional: writes what `serialize` writes except a trailing run of bytes that `value` already
   * holds (a byte array's contents, say), and returns that run instead of copying it into `out`;
   * returns an empty array when there is none. The payload is `out`'s bytes followed by the
   * returned bytes, byte for byte what `serialize` writes, so readers see no difference. The
   * task's RecordWriter then appends the returned bytes to the network buffers straight from
   * `value`, without first copying them into its serialization buffer: one copy fewer per large
   * record (see `serializeRecordHead`). The returned bytes are read before the writer's emit
   * returns and never kept.
   */
  serializeHead?(value: T, out: DataOutputSerializer): Uint8Array;
}

/** The value type of a serializer: `SerializedType<Int32Serializer>` is `number`. */
export type SerializedType<S> = S extends TypeSerializer<infer T> ? T : never;
