import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/** 32-bit signed integers (Java's int): 4 bytes, big-endian. */
export class Int32Serializer implements TypeSerializer<number> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new Int32Serializer();
  readonly name = "int32";

  serialize(value: number, out: DataOutputSerializer): void {
    if (!Number.isInteger(value) || value < -0x8000_0000 || value > 0x7fff_ffff) {
      throw new IllegalArgumentError(
        `int32 value ${describeValue(value)} is not an integer in [-2147483648, 2147483647]`,
      );
    }
    out.writeInt(value);
  }

  deserialize(input: DataInputDeserializer): number {
    return input.readInt();
  }
}
