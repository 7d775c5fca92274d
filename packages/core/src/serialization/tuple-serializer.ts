import { describeValue } from "../describe-value.js";
import { IllegalArgumentError } from "../errors.js";
import type { DataInputDeserializer } from "./data-input-deserializer.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import { withFieldContext } from "./serializer-errors.js";
import type { TypeSerializer } from "./type-serializer.js";

/** One serializer per element of the tuple type `T`, in order. */
export type TupleFieldSerializers<T extends readonly unknown[]> = {
  readonly [K in keyof T]: TypeSerializer<T[K]>;
};

/**
 * A fixed-arity tuple (Flink's TupleSerializer): the fields one after another, each in its own
 * serializer's format, with no header — the arity is part of the type, not of the bytes.
 *
 * `T` is inferred from the serializers, or given explicitly.
 *
 * @example
 * const wordCount = new TupleSerializer([StringSerializer.INSTANCE, Int64Serializer.INSTANCE]);
 * // TupleSerializer<[string, bigint]>
 */
export class TupleSerializer<T extends unknown[]> implements TypeSerializer<T> {
  readonly name: string;
  /** The field serializers, in field order. */
  readonly fieldSerializers: TupleFieldSerializers<T>;
  private readonly fields: readonly TypeSerializer<unknown>[];

  constructor(fieldSerializers: TupleFieldSerializers<T>) {
    if (!Array.isArray(fieldSerializers)) {
      throw new IllegalArgumentError("TupleSerializer needs an array of field serializers");
    }
    this.fieldSerializers = fieldSerializers;
    this.fields = [...(fieldSerializers as readonly TypeSerializer<unknown>[])];
    this.name = `tuple<${this.fields.map((s) => s.name).join(",")}>`;
  }

  serialize(value: T, out: DataOutputSerializer): void {
    const fields = this.fields;
    if (!Array.isArray(value) || value.length !== fields.length) {
      throw new IllegalArgumentError(
        `${this.name} value ${describeValue(value)} is not an array of ${fields.length} elements`,
      );
    }
    let i = 0;
    try {
      for (; i < fields.length; i++)
        (fields[i] as TypeSerializer<unknown>).serialize(value[i], out);
    } catch (error) {
      throw withFieldContext(error, `${this.name} field ${i}`);
    }
  }

  deserialize(input: DataInputDeserializer): T {
    const fields = this.fields;
    const result = new Array<unknown>(fields.length);
    let i = 0;
    try {
      for (; i < fields.length; i++)
        result[i] = (fields[i] as TypeSerializer<unknown>).deserialize(input);
    } catch (error) {
      throw withFieldContext(error, `${this.name} field ${i}`);
    }
    return result as T;
  }
}
