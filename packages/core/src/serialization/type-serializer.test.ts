import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ErrorCodes, IllegalArgumentError } from "../errors.js";
import { expectError } from "../testing/index.js";
import { BooleanSerializer } from "./boolean-serializer.js";
import { BytesSerializer } from "./bytes-serializer.js";
import { DataInputDeserializer } from "./data-input-deserializer.js";
import { DataOutputSerializer } from "./data-output-serializer.js";
import { Float64Serializer } from "./float64-serializer.js";
import { Int32Serializer } from "./int32-serializer.js";
import { Int64Serializer } from "./int64-serializer.js";
import { JsonSerializer } from "./json-serializer.js";
import { ObjectSerializer } from "./object-serializer.js";
import { StringSerializer } from "./string-serializer.js";
import { TupleSerializer } from "./tuple-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/** Serializes, checks the bytes if given, deserializes and checks nothing is left over. */
function roundTrip<T>(serializer: TypeSerializer<T>, value: T, expectedHex?: string): T {
  const out = new DataOutputSerializer({ initialCapacity: 1 });
  serializer.serialize(value, out);
  const bytes = out.copyOfBuffer();
  if (expectedHex !== undefined) expect(Buffer.from(bytes).toString("hex")).toBe(expectedHex);
  const input = new DataInputDeserializer(bytes);
  const result = serializer.deserialize(input);
  expect(input.available()).toBe(0);
  return result;
}

function expectInvalid(serializer: TypeSerializer<unknown>, value: unknown, message: RegExp): void {
  const error = expectError(
    () => serializer.serialize(value, new DataOutputSerializer()),
    IllegalArgumentError,
    ErrorCodes.INVALID_ARGUMENT,
  );
  expect(error.message).toMatch(message);
}

describe("built-in TypeSerializers", () => {
  it("BytesSerializer writes an int32 length then the bytes and returns a copy", () => {
    const source = Uint8Array.of(1, 2, 3);
    const out = new DataOutputSerializer();
    BytesSerializer.INSTANCE.serialize(source, out);
    const bytes = out.copyOfBuffer();
    expect(Buffer.from(bytes).toString("hex")).toBe("00000003010203");
    const result = BytesSerializer.INSTANCE.deserialize(new DataInputDeserializer(bytes));
    bytes[4] = 99;
    expect(Array.from(result)).toEqual([1, 2, 3]);
    expect(result).toBeInstanceOf(Uint8Array);
    expect(roundTrip(BytesSerializer.INSTANCE, new Uint8Array(0), "00000000")).toHaveLength(0);
    expectInvalid(
      BytesSerializer.INSTANCE,
      [1, 2],
      /bytes value an array of 2 elements is not a Uint8Array/,
    );
    expect(() =>
      BytesSerializer.INSTANCE.deserialize(new DataInputDeserializer(Uint8Array.of(0x80, 0, 0, 0))),
    ).toThrow(/negative byte-array length -2147483648 at position 0/);
  });

  it("StringSerializer writes UTF-8 and round-trips any well-formed string", () => {
    expect(roundTrip(StringSerializer.INSTANCE, "€", "00000003e282ac")).toBe("€");
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (value) => {
        expect(roundTrip(StringSerializer.INSTANCE, value)).toBe(value);
      }),
      { numRuns: 100 },
    );
  });

  it("StringSerializer rejects lone surrogates instead of silently replacing them", () => {
    expectInvalid(StringSerializer.INSTANCE, "a\ud800b", /lone surrogate/);
    expectInvalid(StringSerializer.INSTANCE, 5, /string value 5 is not a string/);
    // A proper pair is fine.
    expect(roundTrip(StringSerializer.INSTANCE, "\ud83d\ude00")).toBe("😀");
  });

  it("Int32Serializer round-trips the int32 range and rejects anything else naming the value", () => {
    expect(roundTrip(Int32Serializer.INSTANCE, -1, "ffffffff")).toBe(-1);
    fc.assert(
      fc.property(fc.integer(), (value) => {
        expect(roundTrip(Int32Serializer.INSTANCE, value)).toBe(value);
      }),
    );
    expectInvalid(Int32Serializer.INSTANCE, 2 ** 31, /int32 value 2147483648 is not an integer/);
    expectInvalid(Int32Serializer.INSTANCE, -(2 ** 31) - 1, /-2147483649/);
    expectInvalid(Int32Serializer.INSTANCE, 1.5, /int32 value 1.5/);
    expectInvalid(Int32Serializer.INSTANCE, Number.NaN, /int32 value NaN/);
    expectInvalid(Int32Serializer.INSTANCE, "1", /int32 value "1"/);
  });

  it("Int64Serializer round-trips bigints including both extremes and rejects out-of-range ones", () => {
    expect(roundTrip(Int64Serializer.INSTANCE, -(2n ** 63n), "8000000000000000")).toBe(
      -(2n ** 63n),
    );
    expect(roundTrip(Int64Serializer.INSTANCE, 2n ** 63n - 1n, "7fffffffffffffff")).toBe(
      2n ** 63n - 1n,
    );
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (value) => {
        expect(roundTrip(Int64Serializer.INSTANCE, value)).toBe(value);
      }),
    );
    expectInvalid(Int64Serializer.INSTANCE, 2n ** 63n, /int64 value 9223372036854775808n/);
    expectInvalid(Int64Serializer.INSTANCE, 5, /int64 value 5 is not a bigint/);
  });

  it("Float64Serializer round-trips every double bit-exactly, NaN and -0 included", () => {
    expect(Object.is(roundTrip(Float64Serializer.INSTANCE, -0, "8000000000000000"), -0)).toBe(true);
    expect(roundTrip(Float64Serializer.INSTANCE, Number.NaN)).toBeNaN();
    expect(roundTrip(Float64Serializer.INSTANCE, Number.NEGATIVE_INFINITY)).toBe(
      Number.NEGATIVE_INFINITY,
    );
    fc.assert(
      fc.property(fc.double(), (value) => {
        expect(Object.is(roundTrip(Float64Serializer.INSTANCE, value), value)).toBe(true);
      }),
    );
    expectInvalid(Float64Serializer.INSTANCE, 1n, /float64 value 1n is not a number/);
  });

  it("BooleanSerializer writes 1/0 and rejects other bytes when reading", () => {
    expect(roundTrip(BooleanSerializer.INSTANCE, true, "01")).toBe(true);
    expect(roundTrip(BooleanSerializer.INSTANCE, false, "00")).toBe(false);
    expectInvalid(BooleanSerializer.INSTANCE, 1, /boolean value 1 is not a boolean/);
    expect(() =>
      BooleanSerializer.INSTANCE.deserialize(new DataInputDeserializer(Uint8Array.of(2))),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.SERIALIZATION }));
  });

  it("JsonSerializer round-trips JSON values and turns JSON failures into SerializationError", () => {
    const json = new JsonSerializer<{ a: number[]; b: string | null }>();
    const text = Buffer.from('{"a":[1,2],"b":null}');
    const expectedHex = `000000${text.length.toString(16)}${text.toString("hex")}`;
    expect(roundTrip(json, { a: [1, 2], b: null }, expectedHex)).toEqual({ a: [1, 2], b: null });
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        // JSON has no -0: compare with what JSON itself makes of the value.
        expect(roundTrip(new JsonSerializer<unknown>(), value)).toEqual(
          JSON.parse(JSON.stringify(value)),
        );
      }),
    );
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    for (const bad of [1n, cyclic, undefined]) {
      expect(() =>
        new JsonSerializer<unknown>().serialize(bad, new DataOutputSerializer()),
      ).toThrow(
        expect.objectContaining({ code: ErrorCodes.SERIALIZATION, name: "SerializationError" }),
      );
    }
    const out = new DataOutputSerializer();
    out.writeString("{nope");
    expect(() =>
      new JsonSerializer<unknown>().deserialize(new DataInputDeserializer(out.getSharedBuffer())),
    ).toThrow(
      expect.objectContaining({
        code: ErrorCodes.SERIALIZATION,
        message: expect.stringContaining("not valid JSON"),
      }),
    );
  });

  it("TupleSerializer writes its fields back to back and rebuilds the array", () => {
    const tuple = new TupleSerializer([
      StringSerializer.INSTANCE,
      Int64Serializer.INSTANCE,
      BooleanSerializer.INSTANCE,
    ]);
    expect(tuple.name).toBe("tuple<string,int64,boolean>");
    const value: [string, bigint, boolean] = ["hi", 3n, true];
    expect(roundTrip(tuple, value, "000000026869000000000000000301")).toEqual(value);
    expectInvalid(tuple, ["hi", 3n], /not an array of 3 elements/);
    expectInvalid(
      tuple,
      ["hi", 3, true],
      /tuple<string,int64,boolean> field 1: int64 value 3 is not a bigint/,
    );
  });

  it("ObjectSerializer writes named fields in declaration order and rebuilds the object", () => {
    const wordCount = new ObjectSerializer({
      word: StringSerializer.INSTANCE,
      count: Int32Serializer.INSTANCE,
    });
    expect(wordCount.name).toBe("{word:string,count:int32}");
    expect(roundTrip(wordCount, { word: "a", count: 2 }, "000000016100000002")).toEqual({
      word: "a",
      count: 2,
    });
    expectInvalid(wordCount, { word: "a" }, /field 'count': int32 value undefined/);
    expectInvalid(wordCount, null, /is not an object/);
    // A computed "__proto__" key is an own property; as a field it would set the prototype.
    expect(() => new ObjectSerializer({ ["__proto__"]: Int32Serializer.INSTANCE })).toThrow(
      expect.objectContaining({ code: ErrorCodes.INVALID_ARGUMENT }),
    );
    expect(() => new ObjectSerializer({ n: 5 } as never)).toThrow(
      /field 'n' is not a TypeSerializer/,
    );
  });

  it("nested composites name the whole field path in errors, on write and on read", () => {
    const inner = new ObjectSerializer({ n: Int32Serializer.INSTANCE });
    const outer = new ObjectSerializer({ inner, tag: StringSerializer.INSTANCE });
    expectInvalid(
      outer,
      { inner: { n: 2 ** 40 }, tag: "x" },
      /field 'inner': field 'n': int32 value 1099511627776/,
    );
    const input = new DataInputDeserializer(Uint8Array.of(0, 0, 0, 1, 0, 0));
    expect(() => outer.deserialize(input)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.SERIALIZATION,
        message: expect.stringMatching(/^field 'tag': cannot read 4 bytes at position 4/),
      }),
    );
  });

  it("composites round-trip random values (fast-check)", () => {
    const serializer = new TupleSerializer([
      new ObjectSerializer({ word: StringSerializer.INSTANCE, count: Int64Serializer.INSTANCE }),
      BytesSerializer.INSTANCE,
      Float64Serializer.INSTANCE,
    ]);
    fc.assert(
      fc.property(
        fc.string({ unit: "binary" }),
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.uint8Array({ maxLength: 100 }),
        fc.double({ noNaN: true }),
        (word, count, bytes, double) => {
          const value: [{ word: string; count: bigint }, Uint8Array, number] = [
            { word, count },
            bytes,
            double,
          ];
          const [object, resultBytes, resultDouble] = roundTrip(serializer, value);
          expect([object, Uint8Array.from(resultBytes), resultDouble]).toEqual(value);
        },
      ),
    );
  });
});

describe("composite serializer typing", () => {
  it("infers the value type from the field serializers and accepts an explicit interface", () => {
    interface Keyed {
      key: string;
      seq: bigint;
    }
    const keyed = new ObjectSerializer<Keyed>({
      key: new StringSerializer(),
      seq: new Int64Serializer(),
    });
    const inferred = new ObjectSerializer({
      word: StringSerializer.INSTANCE,
      count: Int64Serializer.INSTANCE,
    });
    const tuple = new TupleSerializer([StringSerializer.INSTANCE, Int32Serializer.INSTANCE]);
    // Compile-time checks: these only type-check with the right inferred value types.
    const asKeyed: TypeSerializer<Keyed> = keyed;
    const asWordCount: TypeSerializer<{ word: string; count: bigint }> = inferred;
    const asTuple: TypeSerializer<[string, number]> = tuple;
    // @ts-expect-error count is a bigint, not a number
    const wrongObject: TypeSerializer<{ word: string; count: number }> = inferred;
    // @ts-expect-error the second element is a number, not a string
    const wrongTuple: TypeSerializer<[string, string]> = tuple;
    expect([asKeyed, asWordCount, asTuple, wrongObject, wrongTuple]).toHaveLength(5);
    const k: Keyed = roundTrip(keyed, { key: "k", seq: 1n });
    const w: { word: string; count: bigint } = roundTrip(inferred, { word: "w", count: 2n });
    const t: [string, number] = roundTrip(tuple, ["t", 3]);
    expect([k, w, t]).toEqual([{ key: "k", seq: 1n }, { word: "w", count: 2n }, ["t", 3]]);
  });
});
