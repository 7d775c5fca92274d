import { IllegalArgumentError, SerializationError } from "../errors.js";

/**
 * Prefixes a composite's field path to a field serializer's error, keeping its class (and so its
 * code): "field 'count': int64 value 1.5 is not a bigint". Other errors pass through unchanged.
 */
export function withFieldContext(error: unknown, context: string): unknown {
  if (error instanceof IllegalArgumentError) {
    return new IllegalArgumentError(`${context}: ${error.message}`, { cause: error });
  }
  if (error instanceof SerializationError) {
    return new SerializationError(`${context}: ${error.message}`, { cause: error });
  }
  return error;
}
