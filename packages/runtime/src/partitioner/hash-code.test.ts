import { ErrorCodes, IllegalArgumentError } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { hashCodeOf } from "./hash-code.js";
import { expectIllegalArgument } from "./test-support/expect-error.js";

// Every expected value below is what the JDK (17) prints for the equal Java value.

describe("hashCodeOf", () => {
  describe("strings hash like String.hashCode()", () => {
    it.each([
      ["hello", 99162322],
      ["", 0],
      ["the quick brown fox jumps over the lazy dog", -2082818701], // wraps past int32
      ["a\u{1F600}é", 57849829], // a surrogate pair counts as two UTF-16 code units
    ])("hashes %j to %i", (key, hash) => {
      expect(hashCodeOf(key)).toBe(hash);
    });
  });

  describe("int32 numbers hash like Integer.hashCode()", () => {
    it.each([0, 1, -1, 42, 2147483647, -2147483648])("hashes %i to itself", (key) => {
      expect(hashCodeOf(key)).toBe(key);
    });

    it("hashes -0 like 0, since the two keys are equal in JavaScript", () => {
      expect(Object.is(hashCodeOf(-0), 0)).toBe(true);
    });
  });

  describe("other numbers hash like Double.hashCode()", () => {
    it.each([
      [1.5, 1073217536],
      [-0.1, 639631363],
      [Math.PI, 340593891],
      [2147483648, 1105199104], // an integer beyond int32 is treated as a double
      [Number.POSITIVE_INFINITY, 2146435072],
      [Number.NEGATIVE_INFINITY, -1048576],
      [Number.NaN, 2146959360],
    ])("hashes %d to %i", (key, hash) => {
      expect(hashCodeOf(key)).toBe(hash);
    });
  });

  describe("bigints hash like Long.hashCode()", () => {
    it.each([
      [1n << 32n, 1],
      [-1n, 0],
      [-5n, 4],
      [1234567890123n, 1912276436],
      [-(1n << 63n), -2147483648],
      [(1n << 63n) - 1n, -2147483648],
    ])("hashes %sn to %i", (key, hash) => {
      expect(hashCodeOf(key)).toBe(hash);
    });

    it.each([1n << 63n, -(1n << 63n) - 1n])("rejects %sn, which is outside int64", (key) => {
      expectIllegalArgument(() => hashCodeOf(key), String(key), "int64");
    });
  });

  it("hashes booleans like Boolean.hashCode()", () => {
    expect(hashCodeOf(true)).toBe(1231);
    expect(hashCodeOf(false)).toBe(1237);
  });

  describe("byte arrays hash like Arrays.hashCode(byte[]) over signed bytes", () => {
    it("hashes unsigned bytes as their signed Java values", () => {
      expect(hashCodeOf(new Uint8Array([0, 1, 127, 128, 255]))).toBe(28777020);
    });

    it("hashes a Buffer and an Int8Array with the same bytes alike", () => {
      expect(hashCodeOf(Buffer.from([0, 1, 127, 128, 255]))).toBe(28777020);
      expect(hashCodeOf(new Int8Array([0, 1, 127, -128, -1]))).toBe(28777020);
    });

    it("hashes an empty byte array to 1", () => {
      expect(hashCodeOf(new Uint8Array(0))).toBe(1);
    });
  });

  describe("arrays hash like Arrays.hashCode(Object[])", () => {
    it("combines element hashes, counting null elements as 0", () => {
      expect(hashCodeOf(["a", 1, null, true])).toBe(3815440);
      expect(hashCodeOf(["a", 1, undefined, true])).toBe(3815440);
    });

    it("hashes nested arrays by content, like Arrays.deepHashCode and List.hashCode", () => {
      expect(hashCodeOf([["x", 2], 3n])).toBe(146137);
    });

    it("hashes an empty array to 1", () => {
      expect(hashCodeOf([])).toBe(1);
    });
  });

  describe("objects", () => {
    it("uses the key's own hashCode() method", () => {
      const key = { id: 7, hashCode: () => 123456 };
      expect(hashCodeOf(key)).toBe(123456);
    });

    it("calls hashCode() with the key as `this`", () => {
      class UserId {
        constructor(readonly id: string) {}
        hashCode(): number {
          return hashCodeOf(this.id);
        }
      }
      expect(hashCodeOf(new UserId("hello"))).toBe(99162322);
    });

    it.each([2 ** 31, 1.5, Number.NaN, "12"])(
      "rejects a hashCode() that returns %j, naming the value",
      (returned) => {
        const key = { hashCode: () => returned as number };
        expectIllegalArgument(() => hashCodeOf(key), "hashCode()", "int32", String(returned));
      },
    );
  });

  describe("unsupported keys", () => {
    it.each([
      [null, "null"],
      [undefined, "undefined"],
      [Symbol("k"), "symbol"],
      [() => 1, "function"],
      [{ id: 1 }, "Object"],
      [new Map([[1, 2]]), "Map"],
      [new Date(0), "Date"],
    ])("rejects %s, naming its type %s", (key, type) => {
      expectIllegalArgument(() => hashCodeOf(key), `type ${type}`, "hashCode()");
    });

    it("reports the error as an IllegalArgumentError instance", () => {
      const error = expectError(
        () => hashCodeOf({}),
        IllegalArgumentError,
        ErrorCodes.INVALID_ARGUMENT,
      );
      expect(error.constructor.name).toBe("IllegalArgumentError");
    });
  });
});
