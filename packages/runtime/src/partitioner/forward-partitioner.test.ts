import { describe, expect, it } from "vitest";
import { ForwardPartitioner } from "./forward-partitioner.js";

describe("ForwardPartitioner", () => {
  it("sends every record to channel 0", () => {
    const partitioner = new ForwardPartitioner<number>();
    partitioner.setup(1);
    for (let record = 0; record < 10; record++) expect(partitioner.selectChannel(record)).toBe(0);
  });

  it("is a pointwise, non-broadcast edge named FORWARD", () => {
    const partitioner = new ForwardPartitioner<number>();
    expect(partitioner.isPointwise()).toBe(true);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("FORWARD");
  });
});
