import { describeValue } from "../describe-value.js";
import { SerializationError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/**
 * Any JSON-representable value, as `JSON.stringify` text in the {@link StringSerializer} format
 * (int32 byte count + UTF-8). Convenient for tests and demos, slow for hot paths. The type `T` is
 * not checked on the way in: `deserialize` returns whatever the JSON holds.
 *
 * Values JSON cannot represent (bigint, cycles, a bare `undefined` or function) and text that is
 * not JSON raise {@link SerializationError} with the original error as `cause`.
 */
export class JsonSerializer<T> implements TypeSerializer<T> {
  readonly name = "json";

  serialize(value: T, out: DataOutputSerializer): void {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (error) {
      throw new SerializationError(
        `cannot serialize ${describeValue(value)} as JSON: ${(error as Error).message}`,
        { cause: error },
      );
    }
    if (text === undefined) {
      throw new SerializationError(`${describeValue(value)} has no JSON representation`);
    }
    out.writeString(text);
  }

  deserialize(input: DataInputDeserializer): T {
    const start = input.position;
    const text = input.readString();
    try {
      return JSON.parse(text) as T;
    } catch (error) {
      throw new SerializationError(
        `the ${text.length}-unit string at position ${start} is not valid JSON: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}
