import { UPPER_BOUND_MAX_PARALLELISM } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { hashCodeOf } from "./hash-code.js";
import {
  assignKeyToParallelOperator,
  assignToKeyGroup,
  computeDefaultMaxParallelism,
  computeKeyGroupForKeyHash,
  computeKeyGroupRangeForOperatorIndex,
  computeOperatorIndexForKeyGroup,
  DEFAULT_LOWER_BOUND_MAX_PARALLELISM,
} from "./key-group-range-assignment.js";
import { expectIllegalArgument } from "./test-support/expect-error.js";

describe("computeDefaultMaxParallelism", () => {
  it.each([
    [1, 128],
    [2, 128],
    [85, 128], // 85 + 42 = 127 still rounds up to 128
    [86, 256], // 86 + 43 = 129 needs the next power of two
    [100, 256],
    [1000, 2048],
    [30000, 32768],
    [32768, 32768],
  ])("picks %i key groups for parallelism %i", (parallelism, expected) => {
    expect(computeDefaultMaxParallelism(parallelism)).toBe(expected);
  });

  it("exposes Flink's bounds", () => {
    expect(DEFAULT_LOWER_BOUND_MAX_PARALLELISM).toBe(128);
    expect(UPPER_BOUND_MAX_PARALLELISM).toBe(32768);
  });

  it.each([0, -1, 32769, 1.5, Number.NaN])("rejects parallelism %d, naming it", (p) => {
    expectIllegalArgument(() => computeDefaultMaxParallelism(p), "parallelism", String(p));
  });
});

describe("assignToKeyGroup", () => {
  // Expected key groups computed in Java: murmur3_32(key.hashCode()) folded as Flink does, % maxP.
  it.each([
    ["hello", 128, 35],
    ["hello", 256, 163],
    ["", 128, 94],
    ["", 256, 222],
    ["flink", 128, 98],
    ["flink", 256, 226],
    ["sluice", 128, 96],
    ["sluice", 256, 224],
    [0, 128, 94],
    [1, 128, 86],
    [42, 128, 29],
    [-7, 128, 33],
    [0, 32768, 31198],
    [1, 32768, 16342],
    [42, 32768, 28189],
    [-7, 32768, 15777],
  ])("puts key %j into key group %i of %i as Flink does", (key, maxParallelism, keyGroup) => {
    expect(assignToKeyGroup(key, maxParallelism)).toBe(keyGroup);
  });

  it("agrees with computeKeyGroupForKeyHash on the key's hash code", () => {
    for (const key of ["a", "b", 17, 99n, [1, "x"]]) {
      expect(assignToKeyGroup(key, 256)).toBe(computeKeyGroupForKeyHash(hashCodeOf(key), 256));
    }
  });

  it.each([0, 32769, 2.5])("rejects maxParallelism %d, naming it", (maxP) => {
    expectIllegalArgument(() => assignToKeyGroup("k", maxP), "maxParallelism", String(maxP));
    expectIllegalArgument(() => computeKeyGroupForKeyHash(1, maxP), "maxParallelism", String(maxP));
  });

  it("rejects keys without a hash code", () => {
    expectIllegalArgument(() => assignToKeyGroup(null, 128), "null");
  });
});

describe("key-group ranges and operator indexes", () => {
  const parallelisms = [1, 2, 3, 7, 128];
  const maxParallelisms = [128, 256];

  for (const maxP of maxParallelisms) {
    for (const p of parallelisms) {
      it(`gives each of ${p} operators a contiguous range and covers all ${maxP} key groups once`, () => {
        let nextKeyGroup = 0;
        for (let i = 0; i < p; i++) {
          const range = computeKeyGroupRangeForOperatorIndex(maxP, p, i);
          expect(range.startKeyGroup).toBe(nextKeyGroup);
          expect(range.numberOfKeyGroups).toBeGreaterThanOrEqual(Math.floor(maxP / p));
          expect(range.numberOfKeyGroups).toBeLessThanOrEqual(Math.ceil(maxP / p));
          nextKeyGroup = range.endKeyGroup + 1;
        }
        expect(nextKeyGroup).toBe(maxP);
      });

      it(`maps every key group to the operator whose range holds it (p=${p}, maxP=${maxP})`, () => {
        const ranges = Array.from({ length: p }, (_, i) =>
          computeKeyGroupRangeForOperatorIndex(maxP, p, i),
        );
        for (let keyGroup = 0; keyGroup < maxP; keyGroup++) {
          const owner = computeOperatorIndexForKeyGroup(maxP, p, keyGroup);
          const holders = ranges.flatMap((range, i) => (range.contains(keyGroup) ? [i] : []));
          expect(holders).toEqual([owner]);
        }
      });
    }
  }

  it("splits 128 key groups over 3 operators as [0,42], [43,85], [86,127]", () => {
    const ranges = [0, 1, 2].map((i) => computeKeyGroupRangeForOperatorIndex(128, 3, i));
    expect(ranges.map((r) => [r.startKeyGroup, r.endKeyGroup])).toEqual([
      [0, 42],
      [43, 85],
      [86, 127],
    ]);
    expect(computeOperatorIndexForKeyGroup(128, 3, 42)).toBe(0);
    expect(computeOperatorIndexForKeyGroup(128, 3, 43)).toBe(1);
    expect(computeOperatorIndexForKeyGroup(128, 3, 85)).toBe(1);
    expect(computeOperatorIndexForKeyGroup(128, 3, 86)).toBe(2);
  });

  it("handles the largest max parallelism without overflow", () => {
    const range = computeKeyGroupRangeForOperatorIndex(32768, 32768, 32767);
    expect([range.startKeyGroup, range.endKeyGroup]).toEqual([32767, 32767]);
    expect(computeOperatorIndexForKeyGroup(32768, 32767, 32767)).toBe(32766);
  });

  it("rejects a parallelism above the max parallelism, naming it", () => {
    expectIllegalArgument(() => computeOperatorIndexForKeyGroup(128, 129, 0), "parallelism", "129");
    expectIllegalArgument(
      () => computeKeyGroupRangeForOperatorIndex(128, 129, 0),
      "parallelism",
      "129",
    );
  });

  it("rejects out-of-range max parallelism, parallelism, key group and operator index", () => {
    expectIllegalArgument(() => computeOperatorIndexForKeyGroup(32769, 1, 0), "maxParallelism");
    expectIllegalArgument(() => computeOperatorIndexForKeyGroup(128, 0, 0), "parallelism", "0");
    expectIllegalArgument(() => computeOperatorIndexForKeyGroup(128, 2, 128), "keyGroup", "128");
    expectIllegalArgument(() => computeOperatorIndexForKeyGroup(128, 2, -1), "keyGroup", "-1");
    expectIllegalArgument(
      () => computeKeyGroupRangeForOperatorIndex(128, 2, 2),
      "operatorIndex",
      "2",
    );
    expectIllegalArgument(
      () => computeKeyGroupRangeForOperatorIndex(128, 2, 0.5),
      "operatorIndex",
      "0.5",
    );
  });
});

describe("assignKeyToParallelOperator", () => {
  it("routes a key to the owner of its key group", () => {
    for (const key of ["hello", "", "flink", "sluice", 0, 1, 42, -7]) {
      const keyGroup = assignToKeyGroup(key, 128);
      const operator = assignKeyToParallelOperator(key, 128, 4);
      expect(operator).toBe(computeOperatorIndexForKeyGroup(128, 4, keyGroup));
      expect(computeKeyGroupRangeForOperatorIndex(128, 4, operator).contains(keyGroup)).toBe(true);
    }
  });

  it("routes known keys to the same operator as Flink", () => {
    // key groups of 128: hello 35, "" 94, flink 98, 42 29 → operators of 4: 1, 2, 3, 0
    expect(assignKeyToParallelOperator("hello", 128, 4)).toBe(1);
    expect(assignKeyToParallelOperator("", 128, 4)).toBe(2);
    expect(assignKeyToParallelOperator("flink", 128, 4)).toBe(3);
    expect(assignKeyToParallelOperator(42, 128, 4)).toBe(0);
  });
});
