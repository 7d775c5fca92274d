/**
 * Renders a value for an error message: what the caller passed or returned, and its type, so a bad
 * value (a string "3" where an index was expected, NaN, an object) is recognisable at a glance.
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case "number":
      return String(value);
    case "bigint":
      return `${value}n (bigint)`;
    case "string":
      return `${JSON.stringify(value)} (string)`;
    case "boolean":
    case "undefined":
    case "symbol":
      return `${String(value)} (${typeof value})`;
    case "function":
      return "a function";
    default:
      return value === null ? "null" : `an object of type ${typeName(value)}`;
  }
}

/**
 * Names the type of a value as a user would recognise it: the constructor name for objects
 * (`Map`, `Date`, `MyKey`), otherwise `typeof`, with `null` spelled out.
 */
export function typeName(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  const ctor = (value as { constructor?: unknown }).constructor;
  return typeof ctor === "function" && ctor.name !== "" ? ctor.name : "Object";
}
