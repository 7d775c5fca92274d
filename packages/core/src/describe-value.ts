/** Strings longer than this are cut in descriptions (UTF-16 units). */
const MAX_STRING = 60;
/** Keys of a plain object named in its description. */
const MAX_KEYS = 5;

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

function describeKeys(value: object): string {
  const keys = Object.keys(value);
  if (keys.length === 0) return "an empty object";
  const shown = keys.slice(0, MAX_KEYS).join(", ");
  return `an object with keys ${shown}${keys.length > MAX_KEYS ? `, … (${keys.length} keys)` : ""}`;
}

/**
 * A short, bounded description of a value for error messages: what a caller passed, returned or
 * configured, so that a bad value (the string "3" where a number was expected, NaN, an object) is
 * recognisable at a glance. Strings are quoted (and cut when long), bigints end in `n`; byte
 * arrays and arrays are named with their size, plain objects with their keys (never their values,
 * which may be large or secret), other objects with their class.
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value.length > MAX_STRING
        ? `${JSON.stringify(value.slice(0, MAX_STRING))}… (a string of ${value.length} units)`
        : JSON.stringify(value);
    case "number":
    case "boolean":
    case "undefined":
      return String(value);
    case "bigint":
      return `${value}n`;
    case "symbol":
      return value.toString();
    case "function":
      return value.name === "" ? "an anonymous function" : `a function ${value.name}`;
  }
  if (typeof value !== "object" || value === null) return String(value);
  if (ArrayBuffer.isView(value)) return `a ${typeName(value)} view of ${value.byteLength} bytes`;
  if (Array.isArray(value)) return `an array of ${value.length} elements`;
  const name = typeName(value);
  return name === "Object" ? describeKeys(value) : `an instance of ${name}`;
}
