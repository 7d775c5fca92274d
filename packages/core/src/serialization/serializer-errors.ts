import { IllegalArgumentError, SerializationError } from "../errors.js";

/** A short, bounded description of a value for error messages (never the whole value). */
export function describeValue(value: unknown): string {
  if (value === null) return "null";
  switch (typeof value) {
    case "bigint":
      return `${value}n`;
    case "string":
      return value.length > 40 ? `a string of ${value.length} units` : JSON.stringify(value);
    case "number":
    case "boolean":
    case "undefined":
      return String(value);
    case "symbol":
    case "function":
      return `a ${typeof value}`;
    default:
      if (value instanceof Uint8Array)
        return `a ${value.constructor.name} of ${value.length} bytes`;
      if (Array.isArray(value)) return `an array of ${value.length} elements`;
      return `an object (${Object.prototype.toString.call(value)})`;
  }
}

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
