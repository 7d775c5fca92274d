import { describeValue } from "../describe-value.js";
import { IllegalArgumentError, SerializationError } from "../errors.js";
import { copyOutOfSharedMemory } from "../memory/shared-memory-copy.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/**
 * Byte arrays: an int32 length, then the bytes. `deserialize` returns a copy, since the input
 * bytes belong to a network buffer that is recycled after the record. The copy is a Node `Buffer`
 * (a `Uint8Array` subclass): values under 4 KiB are carved out of a shared 8 KiB slab, several
 * times cheaper than a separate `Uint8Array` per record (V8 allocates typed arrays above 64 bytes
 * off-heap) — at the price, as for every `Buffer.from`, of keeping that slab alive while the
 * value is. Bytes of memory the slot threads share are copied at their own word alignment
 * ({@link copyOutOfSharedMemory}).
 */
export class BytesSerializer implements TypeSerializer<Uint8Array> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new BytesSerializer();
  readonly name = "bytes";

  serialize(value: Uint8Array, out: DataOutputSerializer): void {
    if (!(value instanceof Uint8Array)) {
      throw new IllegalArgumentError(`bytes value ${describeValue(value)} is not a Uint8Array`);
    }
    out.writeInt(value.length);
    out.writeBytes(value);
  }

  /** Writes the length only: the bytes themselves are appended from `value` by the writer. */
  serializeHead(value: Uint8Array, out: DataOutputSerializer): Uint8Array {
    if (!(value instanceof Uint8Array)) {
      throw new IllegalArgumentError(`bytes value ${describeValue(value)} is not a Uint8Array`);
    }
    out.writeInt(value.length);
    return value;
  }

  deserialize(input: DataInputDeserializer): Uint8Array {
    const length = input.readInt();
    if (length < 0) {
      throw new SerializationError(
        `negative byte-array length ${length} at position ${input.position - 4}`,
      );
    }
    return copyOutOfSharedMemory(input.readFully(length));
  }
}
