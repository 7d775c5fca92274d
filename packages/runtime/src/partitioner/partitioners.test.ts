import { describe, expect, it } from "vitest";
import { BroadcastPartitioner } from "./broadcast-partitioner.js";
import { CustomPartitionerWrapper } from "./custom-partitioner-wrapper.js";
import { ForwardPartitioner } from "./forward-partitioner.js";
import { GlobalPartitioner } from "./global-partitioner.js";
import { assignKeyToParallelOperator } from "./key-group-range-assignment.js";
import { KeyGroupStreamPartitioner } from "./key-group-stream-partitioner.js";
import { createChannelSelector, PARTITIONER_NAMES, parsePartitionerName } from "./partitioners.js";
import { RebalancePartitioner } from "./rebalance-partitioner.js";
import { RescalePartitioner } from "./rescale-partitioner.js";
import { ShufflePartitioner } from "./shuffle-partitioner.js";
import { expectIllegalArgument } from "./test-support/expect-error.js";

const keyed = {
  keySelector: (record: string) => record,
  maxParallelism: 128,
  partitioner: { partition: (_key: string, n: number) => n - 1 },
};

describe("createChannelSelector", () => {
  it.each([
    ["FORWARD", ForwardPartitioner],
    ["rebalance", RebalancePartitioner],
    ["Rescale", RescalePartitioner],
    ["shuffle", ShufflePartitioner],
    ["BROADCAST", BroadcastPartitioner],
    ["global", GlobalPartitioner],
    [" hash ", KeyGroupStreamPartitioner],
    ["custom", CustomPartitionerWrapper],
  ] as const)("creates the %s partitioner, ignoring case and whitespace", (name, type) => {
    expect(createChannelSelector<string, string>(name, keyed)).toBeInstanceOf(type);
  });

  it("round-trips every accepted name through the created partitioner's toString()", () => {
    for (const name of PARTITIONER_NAMES) {
      expect(createChannelSelector<string, string>(name, keyed).toString()).toBe(name);
    }
  });

  it("returns a fresh instance on every call", () => {
    expect(createChannelSelector("rescale")).not.toBe(createChannelSelector("rescale"));
  });

  it("passes the random source to REBALANCE and SHUFFLE", () => {
    const rebalance = createChannelSelector<string>("REBALANCE", { random: () => 0.5 });
    rebalance.setup(4);
    expect(rebalance.selectChannel("r")).toBe(2);
    const shuffle = createChannelSelector<string>("SHUFFLE", { random: () => 0.75 });
    shuffle.setup(4);
    expect(shuffle.selectChannel("r")).toBe(3);
  });

  it("wires the key selector and max parallelism into HASH", () => {
    const hash = createChannelSelector<string, string>("HASH", keyed);
    hash.setup(4);
    expect(hash.selectChannel("hello")).toBe(assignKeyToParallelOperator("hello", 128, 4));
  });

  it("wires the user partitioner into CUSTOM", () => {
    const custom = createChannelSelector<string, string>("CUSTOM", keyed);
    custom.setup(5);
    expect(custom.selectChannel("x")).toBe(4);
  });

  it("names the accepted names when the name is unknown", () => {
    expectIllegalArgument(
      () => createChannelSelector("round-robin"),
      '"round-robin"',
      "FORWARD, REBALANCE, RESCALE, SHUFFLE, BROADCAST, GLOBAL, HASH, CUSTOM",
    );
  });

  it("names the missing option a partitioner requires", () => {
    expectIllegalArgument(
      () => createChannelSelector("HASH", { maxParallelism: 128 }),
      "keySelector",
    );
    expectIllegalArgument(
      () => createChannelSelector<string>("HASH", { keySelector: (r) => r }),
      "HASH",
      "maxParallelism",
    );
    expectIllegalArgument(
      () => createChannelSelector<string>("CUSTOM", { keySelector: (r) => r }),
      "CUSTOM",
      "partitioner",
    );
  });
});

describe("parsePartitionerName", () => {
  it("normalises case and surrounding whitespace", () => {
    expect(parsePartitionerName("  rEbAlAnCe\n")).toBe("REBALANCE");
  });

  it("rejects a non-string name, naming it", () => {
    expectIllegalArgument(() => parsePartitionerName(42 as unknown as string), "42");
  });
});
