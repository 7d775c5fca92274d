import { describe, expect, it } from "vitest";
import { StreamPartitioner } from "./stream-partitioner.js";
import { expectIllegalArgument, expectIllegalState } from "./test-support/expect-error.js";

/** Exposes the protected channel count so the base class can be tested on its own. */
class LastChannelPartitioner extends StreamPartitioner<string> {
  selectChannel(_record: string): number {
    return this.numberOfChannels - 1;
  }
  toString(): string {
    return "LAST";
  }
}

describe("StreamPartitioner", () => {
  it("keeps the number of channels passed to setup and lets a later setup change it", () => {
    const partitioner = new LastChannelPartitioner();
    partitioner.setup(4);
    expect(partitioner.selectChannel("r")).toBe(3);
    partitioner.setup(9);
    expect(partitioner.selectChannel("r")).toBe(8);
  });

  it.each([0, -1, 1.5, Number.NaN])("rejects %d channels, naming the value", (n) => {
    expectIllegalArgument(
      () => new LastChannelPartitioner().setup(n),
      "numberOfChannels",
      String(n),
    );
  });

  it("refuses to select a channel before setup, naming the partitioner", () => {
    expectIllegalState(() => new LastChannelPartitioner().selectChannel("r"), "LAST", "setup");
  });

  it("is neither broadcast nor pointwise unless a subclass says so", () => {
    const partitioner = new LastChannelPartitioner();
    expect(partitioner.isBroadcast()).toBe(false);
    expect(partitioner.isPointwise()).toBe(false);
  });
});
