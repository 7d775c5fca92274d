import { describe, expect, it } from "vitest";
import { describeValue, typeName } from "./describe-value.js";

class MyKey {}

describe("describeValue", () => {
  it.each([
    ["3", '"3"'],
    [3, "3"],
    [Number.NaN, "NaN"],
    [3n, "3n"],
    [true, "true"],
    [undefined, "undefined"],
    [null, "null"],
    [Symbol("s"), "Symbol(s)"],
    [function named() {}, "a function named"],
    [Uint8Array.of(1, 2), "a Uint8Array view of 2 bytes"],
    [[1, 2], "an array of 2 elements"],
    [{}, "an empty object"],
    [{ a: 1, b: { secret: "x" } }, "an object with keys a, b"],
    [new Map(), "an instance of Map"],
    [new MyKey(), "an instance of MyKey"],
  ])("describes %o as %s", (value, expected) => {
    expect(describeValue(value)).toBe(expected);
  });

  it("stays short for large strings and objects, and never shows an object's values", () => {
    expect(describeValue("x".repeat(1000))).toBe(`"${"x".repeat(60)}"… (a string of 1000 units)`);
    const wide = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`k${i}`, "secret"]));
    expect(describeValue(wide)).toBe("an object with keys k0, k1, k2, k3, k4, … (8 keys)");
  });
});

describe("typeName", () => {
  it("names objects by their class and primitives by typeof", () => {
    expect([typeName(new Date(0)), typeName({}), typeName(null), typeName(1)]).toEqual([
      "Date",
      "Object",
      "null",
      "number",
    ]);
  });
});
