import { NetworkBufferPool, ResultPartitionID } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import "@sluice/core/testing";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import { ResultPartitionManager } from "../partition/result-partition-manager.js";
import { buildLocalInputChannel, buildUnknownInputChannel } from "./input-channel-builder.js";
import { buildSingleInputGate } from "./single-input-gate-builder.js";

let global: NetworkBufferPool | undefined;

afterEach(() => {
  global?.destroy();
  global = undefined;
});

describe("buildSingleInputGate and the channel builders", () => {
  it("builds a gate of defaults whose floating pool comes from the given NetworkBufferPool", async () => {
    global = new NetworkBufferPool(16, 64);
    const gate = buildSingleInputGate({ networkBufferPool: global, maxBuffers: 4 });
    expect(gate.owningTaskName).toBe("consumer");
    expect(gate.gateIndex).toBe(0);
    expect(gate.consumedPartitionType).toBe(ResultPartitionType.PIPELINED_BOUNDED);
    expect(gate.numberOfInputChannels).toBe(1);
    const channel = buildUnknownInputChannel({ gate, partitionId: new ResultPartitionID() });
    expect(channel).toBeInstanceOf(UnknownInputChannel);
    gate.setInputChannel(channel);
    gate.setup();
    expect(gate.getBufferPool().getMaxNumberOfMemorySegments()).toBe(4);
    await gate.close();
    expect(global).toHaveAllSegmentsAvailable();
  });

  it("passes gate options through and builds channels at the index, subpartition and partition given", () => {
    global = new NetworkBufferPool(16, 64);
    const gate = buildSingleInputGate({
      networkBufferPool: global,
      maxBuffers: 4,
      numberOfInputChannels: 2,
      gateIndex: 3,
    });
    expect(gate.gateIndex).toBe(3);
    const partitionId = new ResultPartitionID();
    const channel = buildLocalInputChannel({
      gate,
      partitionId,
      channelIndex: 1,
      subpartitionIndex: 2,
      partitionManager: new ResultPartitionManager(),
    });
    expect(channel).toBeInstanceOf(LocalInputChannel);
    expect([channel.channelIndex, channel.subpartitionIndex]).toEqual([1, 2]);
    expect(channel.partitionId).toBe(partitionId);
  });
});
