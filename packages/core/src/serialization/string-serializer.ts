import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/** `String.prototype.isWellFormed` (ES2024, in Node 20) — typed here because the lib is ES2023. */
const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean })
  .isWellFormed;

/**
 * Strings: an int32 byte count, then UTF-8. A string with a lone surrogate has no UTF-8 form; it
 * is rejected with {@link IllegalArgumentError} instead of being silently changed to U+FFFD.
 */
export class StringSerializer implements TypeSerializer<string> {
  /** The shared, stateless instance. */
  static readonly INSTANCE = new StringSerializer();
  readonly name = "string";

  serialize(value: string, out: DataOutputSerializer): void {
    if (typeof value !== "string") {
      throw new IllegalArgumentError(`string value ${describeValue(value)} is not a string`);
    }
    if (!isWellFormed.call(value)) {
      throw new IllegalArgumentError(
        `string of ${value.length} UTF-16 units contains a lone surrogate, which UTF-8 cannot ` +
          "represent (use BytesSerializer for arbitrary UTF-16 data)",
      );
    }
    out.writeString(value);
  }

  deserialize(input: DataInputDeserializer): string {
    return input.readString();
  }
}
