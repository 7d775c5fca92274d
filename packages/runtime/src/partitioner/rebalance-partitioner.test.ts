import { describe, expect, it, vi } from "vitest";
import { RebalancePartitioner } from "./rebalance-partitioner.js";
import { expectIllegalState } from "./test-support/expect-error.js";

function select(partitioner: RebalancePartitioner<string>, count: number): number[] {
  return Array.from({ length: count }, () => partitioner.selectChannel("r"));
}

describe("RebalancePartitioner", () => {
  it("goes round robin from the channel drawn at setup and wraps around", () => {
    const partitioner = new RebalancePartitioner<string>(() => 0.5);
    partitioner.setup(4);
    expect(select(partitioner, 9)).toEqual([2, 3, 0, 1, 2, 3, 0, 1, 2]);
  });

  it("can start at the last channel", () => {
    const partitioner = new RebalancePartitioner<string>(() => 0.99);
    partitioner.setup(3);
    expect(select(partitioner, 4)).toEqual([2, 0, 1, 2]);
  });

  it("draws the start once per setup, not once per record", () => {
    const random = vi.fn(() => 0.25);
    const partitioner = new RebalancePartitioner<string>(random);
    partitioner.setup(4);
    select(partitioner, 10);
    expect(random).toHaveBeenCalledTimes(1);
  });

  it("draws a new start when set up again with another number of channels", () => {
    const draws = [0.5, 0.9];
    const partitioner = new RebalancePartitioner<string>(() => draws.shift() ?? 0);
    partitioner.setup(4);
    expect(select(partitioner, 3)).toEqual([2, 3, 0]);
    partitioner.setup(10);
    expect(select(partitioner, 3)).toEqual([9, 0, 1]);
  });

  it("spreads records exactly evenly over whole rounds with the default random source", () => {
    const partitioner = new RebalancePartitioner<string>();
    partitioner.setup(5);
    const counts = new Array<number>(5).fill(0);
    for (const channel of select(partitioner, 50)) counts[channel] = (counts[channel] ?? 0) + 1;
    expect(counts).toEqual([10, 10, 10, 10, 10]);
  });

  it("rejects a random source that returns a value outside [0, 1)", () => {
    expectIllegalState(() => new RebalancePartitioner<string>(() => 1).setup(4), "[0, 1)", "1");
  });

  it("refuses to select before setup", () => {
    expectIllegalState(() => new RebalancePartitioner<string>().selectChannel("r"), "setup");
  });

  it("is an all-to-all edge named REBALANCE", () => {
    const partitioner = new RebalancePartitioner<string>();
    expect(partitioner.isPointwise()).toBe(false);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("REBALANCE");
  });
});
