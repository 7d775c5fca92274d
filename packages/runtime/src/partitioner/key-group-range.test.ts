import { describe, expect, it } from "vitest";
import { KeyGroupRange } from "./key-group-range.js";
import { expectIllegalArgument } from "./test-support/expect-error.js";

describe("KeyGroupRange", () => {
  it("holds its inclusive bounds and counts them", () => {
    const range = new KeyGroupRange(43, 85);
    expect(range.numberOfKeyGroups).toBe(43);
    expect(range.contains(42)).toBe(false);
    expect(range.contains(43)).toBe(true);
    expect(range.contains(85)).toBe(true);
    expect(range.contains(86)).toBe(false);
  });

  it("iterates its key groups in ascending order", () => {
    expect([...new KeyGroupRange(3, 6)]).toEqual([3, 4, 5, 6]);
  });

  it("describes an empty range when the end is one below the start", () => {
    const empty = new KeyGroupRange(0, -1);
    expect(empty.numberOfKeyGroups).toBe(0);
    expect([...empty]).toEqual([]);
    expect(empty.contains(0)).toBe(false);
  });

  it("compares by bounds and prints like Flink", () => {
    expect(new KeyGroupRange(0, 127).equals(new KeyGroupRange(0, 127))).toBe(true);
    expect(new KeyGroupRange(0, 127).equals(new KeyGroupRange(0, 126))).toBe(false);
    expect(String(new KeyGroupRange(0, 127))).toBe(
      "KeyGroupRange{startKeyGroup=0, endKeyGroup=127}",
    );
  });

  it("rejects a negative or fractional start and an end below start - 1", () => {
    expectIllegalArgument(() => new KeyGroupRange(-1, 3), "startKeyGroup", "-1");
    expectIllegalArgument(() => new KeyGroupRange(0.5, 3), "startKeyGroup", "0.5");
    expectIllegalArgument(() => new KeyGroupRange(5, 3), "endKeyGroup", "3");
  });
});
