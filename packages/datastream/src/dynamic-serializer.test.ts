import {
  DataInputDeserializer,
  DataOutputSerializer,
  ErrorCodes,
  SerializationError,
} from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DynamicSerializer } from "./dynamic-serializer.js";

const serializer = DynamicSerializer.INSTANCE;

function roundTrip(value: unknown): unknown {
  const out = new DataOutputSerializer();
  serializer.serialize(value, out);
  const input = new DataInputDeserializer(out.copyOfBuffer());
  const read = serializer.deserialize(input);
  expect(input.available()).toBe(0);
  return read;
}

/** Values of every type the serializer writes, nested. */
const values = fc.letrec((tie) => ({
  leaf: fc.oneof(
    fc.string(),
    fc.integer(),
    fc.double(),
    fc.bigInt(),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.uint8Array({ maxLength: 20 }),
  ),
  node: fc.oneof(
    { depthSize: "small" },
    tie("leaf"),
    fc.array(tie("node"), { maxLength: 5 }),
    fc.dictionary(fc.string(), tie("node"), { maxKeys: 5, noNullPrototype: true }),
  ),
})).node;

describe("DynamicSerializer", () => {
  it("reads back an equal value for numbers, strings, bigints, booleans, null, undefined, bytes, arrays and plain objects, nested", () => {
    fc.assert(
      fc.property(values, (value) => {
        expect(roundTrip(value)).toStrictEqual(value);
      }),
      { numRuns: 500 },
    );
  });

  it("keeps -0, NaN and bigints beyond int64", () => {
    expect(Object.is(roundTrip(-0), -0)).toBe(true);
    expect(roundTrip(Number.NaN)).toBeNaN();
    expect(roundTrip(2n ** 100n + 7n)).toBe(2n ** 100n + 7n);
    expect(roundTrip(-(2n ** 70n))).toBe(-(2n ** 70n));
    expect(roundTrip({ __proto__: 1 } as unknown)).toEqual({ __proto__: 1 });
  });

  it("refuses a value of another type, naming it and pointing at returns()", () => {
    for (const value of [new Map(), new Date(0), () => 1, Symbol("s"), { nested: new Set() }]) {
      expect(() => serializer.serialize(value, new DataOutputSerializer())).toThrow(
        expect.objectContaining({
          code: ErrorCodes.INVALID_ARGUMENT,
          message: expect.stringContaining("declare the stream's serializer with .returns(...)"),
        }),
      );
    }
  });

  it("refuses a cyclic value instead of overflowing the stack", () => {
    const cyclic: unknown[] = [];
    cyclic.push(cyclic);
    expect(() => serializer.serialize(cyclic, new DataOutputSerializer())).toThrow(
      /nested deeper than 256 levels/,
    );
  });

  it("fails on an unknown tag or a count beyond the input with a SerializationError naming the position", () => {
    expect(() => serializer.deserialize(new DataInputDeserializer(Uint8Array.of(99)))).toThrow(
      SerializationError,
    );
    expect(() => serializer.deserialize(new DataInputDeserializer(Uint8Array.of(99)))).toThrow(
      /unknown type tag 99 at position 0/,
    );
    const hugeArray = Uint8Array.of(10, 0x7f, 0xff, 0xff, 0xff);
    expect(() => serializer.deserialize(new DataInputDeserializer(hugeArray))).toThrow(
      /2147483647 array elements at position 0 with 0 bytes left/,
    );
  });
});
