import { describe, expect, it } from "vitest";
import { RescalePartitioner } from "./rescale-partitioner.js";
import { expectIllegalState } from "./test-support/expect-error.js";

function select(partitioner: RescalePartitioner<number>, count: number): number[] {
  return Array.from({ length: count }, (_, i) => partitioner.selectChannel(i));
}

describe("RescalePartitioner", () => {
  it("goes round robin from channel 0 and wraps around", () => {
    const partitioner = new RescalePartitioner<number>();
    partitioner.setup(3);
    expect(select(partitioner, 7)).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });

  it("always picks channel 0 when there is one channel", () => {
    const partitioner = new RescalePartitioner<number>();
    partitioner.setup(1);
    expect(select(partitioner, 3)).toEqual([0, 0, 0]);
  });

  it("restarts at channel 0 when set up again", () => {
    const partitioner = new RescalePartitioner<number>();
    partitioner.setup(4);
    expect(select(partitioner, 3)).toEqual([0, 1, 2]);
    partitioner.setup(2);
    expect(select(partitioner, 3)).toEqual([0, 1, 0]);
  });

  it("refuses to select before setup", () => {
    expectIllegalState(() => new RescalePartitioner<number>().selectChannel(1), "setup");
  });

  it("is a pointwise edge named RESCALE", () => {
    const partitioner = new RescalePartitioner<number>();
    expect(partitioner.isPointwise()).toBe(true);
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.toString()).toBe("RESCALE");
  });
});
