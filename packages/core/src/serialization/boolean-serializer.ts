import { describeValue } from "../describe-value.js";
import { IllegalArgumentError, SerializationError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/**
 * Booleans: one byte, 1 or 0. Decoding is strict — any other byte is a SerializationError —
 * because a stray value here almost always means the reader is misaligned with the writer.
 */
export class BooleanSerializer implements TypeSerializer<boolean> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new BooleanSerializer();
  readonly name = "boolean";

  serialize(value: boolean, out: DataOutputSerializer): void {
    if (typeof value !== "boolean") {
      throw new IllegalArgumentError(`boolean value ${describeValue(value)} is not a boolean`);
    }
    out.writeBoolean(value);
  }

  deserialize(input: DataInputDeserializer): boolean {
    const byte = input.readUnsignedByte();
    if (byte > 1) {
      throw new SerializationError(
        `boolean byte 0x${byte.toString(16)} at position ${input.position - 1} is neither 0 nor 1`,
      );
    }
    return byte === 1;
  }
}
