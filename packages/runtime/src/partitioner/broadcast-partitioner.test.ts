import { describe, expect, it } from "vitest";
import { BroadcastPartitioner } from "./broadcast-partitioner.js";
import { expectIllegalState } from "./test-support/expect-error.js";

describe("BroadcastPartitioner", () => {
  it("declares itself broadcast so the writer copies records to all channels", () => {
    const partitioner = new BroadcastPartitioner<string>();
    partitioner.setup(4);
    expect(partitioner.isBroadcast()).toBe(true);
    expect(partitioner.isPointwise()).toBe(false);
  });

  it("refuses to select a single channel", () => {
    const partitioner = new BroadcastPartitioner<string>();
    partitioner.setup(4);
    expectIllegalState(() => partitioner.selectChannel("r"), "broadcast selects all channels");
  });

  it("is named BROADCAST", () => {
    expect(new BroadcastPartitioner<string>().toString()).toBe("BROADCAST");
  });
});
