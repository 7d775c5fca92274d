import { describeValue } from "@sluice/core";
import { DescriptorError } from "../errors.js";
import {
  type ResultPartitionType,
  resultPartitionTypeOf,
} from "../partition/result-partition-type.js";

/** A JSON value. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue };

/** A JSON object: the open record plugins use to carry their own descriptor fields. */
export type JsonObject = { [key: string]: JsonValue };

/** The serialization version every descriptor of this release writes and reads. */
export const DESCRIPTOR_VERSION = 1;

/** Describes a JSON value in an error message; an absent field is "nothing (missing)". */
function describe(value: unknown): string {
  return value === undefined ? "nothing (missing)" : describeValue(value);
}

/**
 * Reads the fields of one JSON object and throws a {@link DescriptorError} naming the descriptor
 * type, the field path, what was expected and what was found. Internal to the codecs.
 */
export class JsonFields {
  private constructor(
    /** The descriptor type being decoded, named in every error. */
    readonly typeName: string,
    /** Where this object sits in the descriptor (`""` at the top, `"shuffleDescriptor"`...). */
    readonly path: string,
    private readonly obj: Record<string, unknown>,
  ) {}

  /** Wraps `value`, which must be a JSON object. */
  static of(typeName: string, path: string, value: unknown): JsonFields {
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new DescriptorError(
        `${typeName}: ${path === "" ? "the descriptor" : `field "${path}"`} must be an object, got ${describe(value)}`,
      );
    }
    return new JsonFields(typeName, path, value as Record<string, unknown>);
  }

  /** Checks the `version` field against {@link DESCRIPTOR_VERSION}. */
  version(): void {
    const version = this.obj.version;
    if (version !== DESCRIPTOR_VERSION) {
      this.fail("version", `must be ${DESCRIPTOR_VERSION} (the version this build reads)`, version);
    }
  }

  /** The dotted path of `field` from the descriptor's root, for error messages. */
  fieldPath(field: string): string {
    return this.path === "" ? field : `${this.path}.${field}`;
  }

  /** Throws a DescriptorError: `field` was expected to be `expected` but held `got`. */
  fail(field: string, expected: string, got: unknown, cause?: unknown): never {
    throw new DescriptorError(
      `${this.typeName}: field "${this.fieldPath(field)}" ${expected}, got ${describe(got)}`,
      cause === undefined ? undefined : { cause },
    );
  }

  /** The unchecked value of `field`. */
  raw(field: string): unknown {
    return this.obj[field];
  }

  /** True when `field` is present (not `undefined`). */
  has(field: string): boolean {
    return this.obj[field] !== undefined;
  }

  /** `field` as a string, or a DescriptorError. */
  string(field: string): string {
    const value = this.obj[field];
    if (typeof value !== "string") this.fail(field, "must be a string", value);
    return value;
  }

  /** `field` as a boolean, or a DescriptorError. */
  boolean(field: string): boolean {
    const value = this.obj[field];
    if (typeof value !== "boolean") this.fail(field, "must be true or false", value);
    return value;
  }

  /** `field` as a boolean, `fallback` when absent. */
  optionalBoolean(field: string, fallback: boolean): boolean {
    return this.obj[field] === undefined ? fallback : this.boolean(field);
  }

  /** `field` as an integer in `[min, max]`, or a DescriptorError naming the range. */
  integer(field: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
    const value = this.obj[field];
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in [${min}, ${max}]`;
      this.fail(field, `must be an integer ${range}`, value);
    }
    return value;
  }

  /** The fields of the nested object `field`, or a DescriptorError. */
  object(field: string): JsonFields {
    return JsonFields.of(this.typeName, this.fieldPath(field), this.obj[field]);
  }

  /** `field` as an array (items unchecked), or a DescriptorError. */
  array(field: string): unknown[] {
    const value = this.obj[field];
    if (!Array.isArray(value)) this.fail(field, "must be an array", value);
    return value;
  }

  /** Parses an id from its string form with `parse` (which throws on bad input). */
  id<T>(field: string, kind: string, parse: (text: string) => T): T {
    const text = this.string(field);
    try {
      return parse(text);
    } catch (error) {
      return this.fail(field, `must be ${kind}`, text, error);
    }
  }

  /** `field` as the name of a ResultPartitionType, or a DescriptorError. */
  partitionType(field: string): ResultPartitionType {
    const name = this.string(field);
    const type = resultPartitionTypeOf(name);
    if (type === undefined) {
      this.fail(
        field,
        "must name a ResultPartitionType (BLOCKING, PIPELINED, PIPELINED_BOUNDED, ...)",
        name,
      );
    }
    return type;
  }

  /** An optional open JSON object (a plugin's own fields, a task's configuration). */
  optionalJsonObject(field: string): JsonObject | undefined {
    const value = this.obj[field];
    if (value === undefined) return undefined;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      this.fail(field, "must be an object of JSON values", value);
    }
    checkJson(this, field, value);
    return value as JsonObject;
  }
}

function checkJson(fields: JsonFields, field: string, value: unknown): void {
  if (value === null || typeof value === "string" || typeof value === "boolean") return;
  if (typeof value === "number") {
    if (!Number.isFinite(value)) fields.fail(field, "must hold only JSON values", value);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) checkJson(fields, field, item);
    return;
  }
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) {
    for (const item of Object.values(value)) checkJson(fields, field, item);
    return;
  }
  fields.fail(field, "must hold only JSON values", value);
}

/** Codec of one descriptor type: its versioned JSON form and text form. */
export interface DescriptorCodec<T, J> {
  /** The descriptor type's name, used in error messages. */
  readonly typeName: string;
  /** The `version` this codec writes (and the only one it reads). */
  readonly version: number;
  /** The JSON form of `value` (plain data, safe for `JSON.stringify`, IPC or `structuredClone`). */
  toJSON(value: T): J;
  /**
   * Validates and converts a JSON form back (e.g. one received over IPC).
   *
   * @throws DescriptorError (`SLUICE_ERR_DESCRIPTOR`) naming the bad field.
   */
  fromJSON(json: unknown): T;
  /** `JSON.stringify(toJSON(value))`. */
  serialize(value: T): string;
  /**
   * Parses text written by {@link serialize}.
   *
   * @throws DescriptorError (`SLUICE_ERR_DESCRIPTOR`) when the text is not JSON or not valid.
   */
  deserialize(text: string): T;
}

/** Builds a codec from its JSON conversion pair. */
export function defineCodec<T, J>(
  typeName: string,
  toJSON: (value: T) => J,
  fromFields: (fields: JsonFields) => T,
): DescriptorCodec<T, J> {
  const fromJSON = (json: unknown): T => {
    const fields = JsonFields.of(typeName, "", json);
    fields.version();
    return fromFields(fields);
  };
  return Object.freeze({
    typeName,
    version: DESCRIPTOR_VERSION,
    toJSON,
    fromJSON,
    serialize(value: T): string {
      return JSON.stringify(toJSON(value));
    },
    deserialize(text: string): T {
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch (error) {
        throw new DescriptorError(
          `${typeName}: not valid JSON (${(error as Error).message}): ${describe(String(text))}`,
          { cause: error },
        );
      }
      return fromJSON(json);
    },
  });
}

/**
 * Reads a nested descriptor with another codec, prefixing the field path on errors. `value`
 * defaults to the field's value (pass it for array items, with `field` like `items[3]`).
 */
export function nested<T>(
  fields: JsonFields,
  field: string,
  codec: { fromJSON(json: unknown): T; readonly typeName: string },
  value: unknown = fields.raw(field),
): T {
  try {
    return codec.fromJSON(value);
  } catch (error) {
    if (error instanceof DescriptorError) {
      throw new DescriptorError(
        `${fields.typeName}: in field "${fields.fieldPath(field)}": ${error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
}
