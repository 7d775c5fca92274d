import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import { withFieldContext } from "./serializer-errors.js";
import type { TypeSerializer } from "./type-serializer.js";

/** One serializer per field of the object type `T`, by field name. */
export type FieldSerializers<T> = { readonly [K in keyof T]-?: TypeSerializer<T[K]> };

/**
 * A record type with named fields (Flink's PojoSerializer/RowSerializer, without nulls or
 * subclasses): the fields one after another, in the order of `fields`' own keys, with no names
 * or header on the wire. Both sides must build the serializer from the same field map.
 *
 * `deserialize` builds plain objects whose keys are added in the same order every time, so they
 * share one hidden class. Extra properties of a serialized value are ignored; a missing one is
 * passed to its field serializer as `undefined` and rejected there (with the field name).
 *
 * `T` is inferred from the field map, or given explicitly for an existing interface.
 *
 * @example
 * const wordCount = new ObjectSerializer({ word: StringSerializer.INSTANCE, count: Int64Serializer.INSTANCE });
 * // ObjectSerializer<{ word: string; count: bigint }>
 * const keyed = new ObjectSerializer<Keyed>({ key: StringSerializer.INSTANCE, seq: Int64Serializer.INSTANCE });
 */
export class ObjectSerializer<T extends object> implements TypeSerializer<T> {
  readonly name: string;
  /** The field map the serializer was built from. */
  readonly fields: FieldSerializers<T>;
  private readonly names: readonly string[];
  private readonly serializers: readonly TypeSerializer<unknown>[];

  constructor(fields: FieldSerializers<T>) {
    if (typeof fields !== "object" || fields === null) {
      throw new IllegalArgumentError("ObjectSerializer needs an object of field serializers");
    }
    const names = Object.keys(fields);
    for (const name of names) {
      // Assigning "__proto__" on a plain object would change its prototype, not add a field.
      if (name === "__proto__") {
        throw new IllegalArgumentError('ObjectSerializer cannot have a field named "__proto__"');
      }
      const serializer = (fields as Record<string, TypeSerializer<unknown> | undefined>)[name];
      if (
        typeof serializer?.serialize !== "function" ||
        typeof serializer.deserialize !== "function"
      ) {
        throw new IllegalArgumentError(`field '${name}' is not a TypeSerializer`);
      }
    }
    this.fields = fields;
    this.names = names;
    this.serializers = names.map(
      (name) =>
        (fields as Record<string, TypeSerializer<unknown>>)[name] as TypeSerializer<unknown>,
    );
    this.name = `{${names.map((name, i) => `${name}:${this.serializers[i]?.name}`).join(",")}}`;
  }

  serialize(value: T, out: DataOutputSerializer): void {
    if (typeof value !== "object" || value === null) {
      throw new IllegalArgumentError(`${this.name} value ${describeValue(value)} is not an object`);
    }
    const names = this.names;
    const serializers = this.serializers;
    const record = value as Record<string, unknown>;
    let i = 0;
    try {
      for (; i < names.length; i++) {
        (serializers[i] as TypeSerializer<unknown>).serialize(record[names[i] as string], out);
      }
    } catch (error) {
      throw withFieldContext(error, `field '${names[i]}'`);
    }
  }

  deserialize(input: DataInputDeserializer): T {
    const names = this.names;
    const serializers = this.serializers;
    const result: Record<string, unknown> = {};
    let i = 0;
    try {
      for (; i < names.length; i++) {
        result[names[i] as string] = (serializers[i] as TypeSerializer<unknown>).deserialize(input);
      }
    } catch (error) {
      throw withFieldContext(error, `field '${names[i]}'`);
    }
    return result as T;
  }
}
