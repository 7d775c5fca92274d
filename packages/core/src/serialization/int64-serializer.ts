import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

const MIN_INT64 = -(2n ** 63n);
const MAX_INT64 = 2n ** 63n - 1n;

/** 64-bit signed integers (Java's long) as `bigint`: 8 bytes, big-endian. */
export class Int64Serializer implements TypeSerializer<bigint> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new Int64Serializer();
  readonly name = "int64";

  serialize(value: bigint, out: DataOutputSerializer): void {
    if (typeof value !== "bigint" || value < MIN_INT64 || value > MAX_INT64) {
      throw new IllegalArgumentError(
        `int64 value ${describeValue(value)} is not a bigint in [-2^63, 2^63 - 1]`,
      );
    }
    out.writeLong(value);
  }

  deserialize(input: DataInputDeserializer): bigint {
    return input.readLong();
  }
}
