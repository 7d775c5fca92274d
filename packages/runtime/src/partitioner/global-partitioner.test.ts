import { describe, expect, it } from "vitest";
import { GlobalPartitioner } from "./global-partitioner.js";

describe("GlobalPartitioner", () => {
  it("sends every record to channel 0 whatever the number of channels", () => {
    const partitioner = new GlobalPartitioner<string>();
    partitioner.setup(5);
    for (const record of ["a", "b", "c", "d", "e", "f"]) {
      expect(partitioner.selectChannel(record)).toBe(0);
    }
  });

  it("is an all-to-all, non-broadcast edge named GLOBAL", () => {
    const partitioner = new GlobalPartitioner<string>();
    expect(partitioner.isPointwise()).toBe(false);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("GLOBAL");
  });
});
