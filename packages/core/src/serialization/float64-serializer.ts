import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/** IEEE 754 doubles (Java's double): 8 bytes, big-endian; NaN, ±Infinity and −0 round-trip. */
export class Float64Serializer implements TypeSerializer<number> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new Float64Serializer();
  readonly name = "float64";

  serialize(value: number, out: DataOutputSerializer): void {
    if (typeof value !== "number") {
      throw new IllegalArgumentError(`float64 value ${describeValue(value)} is not a number`);
    }
    out.writeDouble(value);
  }

  deserialize(input: DataInputDeserializer): number {
    return input.readDouble();
  }
}
