import { ResultPartitionType } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { createGateBuffersSpec, outputPoolSize } from "./gate-buffers-spec.js";

const BUFFERS_PER_CHANNEL = 2;
const FLOATING_PER_GATE = 8;

/** The spec of a BLOCKING gate of `channels` channels, with no maximum of required buffers. */
function batchGateSpec(channels: number) {
  return createGateBuffersSpec(
    undefined,
    BUFFERS_PER_CHANNEL,
    FLOATING_PER_GATE,
    ResultPartitionType.BLOCKING,
    channels,
  );
}

describe("createGateBuffersSpec (GateBuffersSpecTest)", () => {
  it.each([1, 2, 100, 1000, 5000])(
    "gives a streaming gate of %i channels 2 exclusive buffers each and a floating pool of [1, 8]",
    (channels) => {
      for (const type of [ResultPartitionType.PIPELINED, ResultPartitionType.PIPELINED_BOUNDED]) {
        expect(
          createGateBuffersSpec(undefined, BUFFERS_PER_CHANNEL, FLOATING_PER_GATE, type, channels),
        ).toEqual({
          exclusiveBuffersPerChannel: 2,
          requiredFloatingBuffers: 1,
          totalFloatingBuffers: 8,
        });
      }
    },
  );

  it("gives a batch gate of 1000 channels no exclusive buffers and a floating pool of [1000, 2008]", () => {
    expect(batchGateSpec(1000)).toEqual({
      exclusiveBuffersPerChannel: 0,
      requiredFloatingBuffers: 1000,
      totalFloatingBuffers: 2008,
    });
  });

  it("keeps 2 exclusive buffers per channel for a small batch gate", () => {
    // 100 channels need 201 < 1000 buffers: nothing has to shrink.
    expect(batchGateSpec(100)).toEqual({
      exclusiveBuffersPerChannel: 2,
      requiredFloatingBuffers: 1,
      totalFloatingBuffers: 8,
    });
  });

  it("shrinks exclusive buffers to fit a configured maximum of required buffers", () => {
    // 400 channels want 801; a cap of 500 leaves (500 - 1) / 400 = 1 exclusive per channel.
    expect(
      createGateBuffersSpec(
        500,
        BUFFERS_PER_CHANNEL,
        FLOATING_PER_GATE,
        ResultPartitionType.PIPELINED_BOUNDED,
        400,
      ),
    ).toEqual({
      exclusiveBuffersPerChannel: 1,
      requiredFloatingBuffers: 100,
      totalFloatingBuffers: 408,
    });
  });

  it("works without exclusive buffers per channel (buffers-per-channel 0)", () => {
    expect(
      createGateBuffersSpec(undefined, 0, FLOATING_PER_GATE, ResultPartitionType.PIPELINED, 10),
    ).toEqual({
      exclusiveBuffersPerChannel: 0,
      requiredFloatingBuffers: 1,
      totalFloatingBuffers: 8,
    });
  });
});

describe("outputPoolSize (NettyShuffleUtils)", () => {
  it("bounds a PIPELINED_BOUNDED pool by subpartitions × buffers-per-channel + floating", () => {
    expect(
      outputPoolSize(
        4,
        BUFFERS_PER_CHANNEL,
        FLOATING_PER_GATE,
        ResultPartitionType.PIPELINED_BOUNDED,
      ),
    ).toEqual({ min: 5, max: 16 });
    expect(
      outputPoolSize(
        100,
        BUFFERS_PER_CHANNEL,
        FLOATING_PER_GATE,
        ResultPartitionType.PIPELINED_BOUNDED,
      ),
    ).toEqual({ min: 101, max: 208 });
  });

  it("never makes the maximum smaller than the minimum", () => {
    expect(outputPoolSize(10, 0, 0, ResultPartitionType.PIPELINED_BOUNDED)).toEqual({
      min: 11,
      max: 11,
    });
  });

  it("leaves a PIPELINED (unbounded) pool without a maximum", () => {
    const { min, max } = outputPoolSize(
      4,
      BUFFERS_PER_CHANNEL,
      FLOATING_PER_GATE,
      ResultPartitionType.PIPELINED,
    );
    expect(min).toBe(5);
    expect(max).toBe(Number.MAX_SAFE_INTEGER);
  });
});
