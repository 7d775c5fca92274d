import {
  CancelledError,
  deferred,
  ErrorCodes,
  FreeingBufferRecycler,
  MemorySegment,
  NetworkBuffer,
} from "@sluice/core";
import { expectError, expectRejection } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { ChannelStateSerializer } from "./channel-state-serializer.js";
import { ChannelStateWriterImpl } from "./channel-state-writer-impl.js";
import { CheckpointError } from "./checkpoint-error.js";

function bytes(...values: number[]): NetworkBuffer {
  const segment = MemorySegment.allocateUnpooled(values.length);
  segment.memory.set(values);
  return new NetworkBuffer(segment, FreeingBufferRecycler, undefined, values.length);
}

describe("ChannelStateWriterImpl", () => {
  it("collects each channel's data in order and completes once input and output are done", async () => {
    const writer = new ChannelStateWriterImpl("T");
    writer.start(1n);
    const result = writer.getWriteResult(1n);
    const given = [bytes(1, 2), bytes(3)];
    writer.addInputData(1n, { gateIndex: 0, channelIndex: 1 }, given);
    writer.addOutputData(1n, { partitionIndex: 0, subpartitionIndex: 0 }, [bytes(9)]);
    writer.addInputData(1n, { gateIndex: 0, channelIndex: 1 }, [bytes(4)]);
    // The writer copied the bytes and gave the buffers back.
    expect(given.every((buffer) => buffer.isRecycled())).toBe(true);
    writer.finishOutput(1n);
    let done = false;
    void result.then(() => {
      done = true;
    });
    await Promise.resolve();
    expect(done).toBe(false);
    writer.finishInput(1n);
    const state = await result;
    expect(state.inputChannelState).toEqual([
      { info: { gateIndex: 0, channelIndex: 1 }, data: Uint8Array.of(1, 2, 3, 4) },
    ]);
    expect(state.resultSubpartitionState).toEqual([
      { info: { partitionIndex: 0, subpartitionIndex: 0 }, data: Uint8Array.of(9) },
    ]);
    expect(writer.isStarted(1n)).toBe(false);
  });

  it("recycles and drops data of checkpoints it does not collect, and rejects aborted ones", async () => {
    const writer = new ChannelStateWriterImpl("T");
    const stray = bytes(1);
    writer.addInputData(5n, { gateIndex: 0, channelIndex: 0 }, [stray]);
    expect(stray.isRecycled()).toBe(true);
    writer.start(6n);
    const result = writer.getWriteResult(6n);
    writer.abort(6n, new CheckpointError("checkpoint 6 was aborted"));
    await expectRejection(result, CheckpointError, ErrorCodes.CHECKPOINT, "aborted");
    const late = bytes(2);
    writer.addOutputData(6n, { partitionIndex: 0, subpartitionIndex: 0 }, [late]);
    expect(late.isRecycled()).toBe(true);
    expectError(
      () => writer.getWriteResult(6n),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "no channel state is collected for checkpoint 6",
    );
  });
});

describe("ChannelStateWriterImpl output futures (timeoutable aligned barriers)", () => {
  const info = { partitionIndex: 1, subpartitionIndex: 2 };

  it("keeps the output open until every announced future settled, then adds what they hold", async () => {
    const writer = new ChannelStateWriterImpl("T");
    writer.start(3n);
    const result = writer.getWriteResult(3n);
    const timedOut = deferred<readonly NetworkBuffer[]>();
    const sentAligned = deferred<readonly NetworkBuffer[]>();
    writer.addOutputDataFuture(3n, info, timedOut.promise);
    writer.addOutputDataFuture(
      3n,
      { partitionIndex: 0, subpartitionIndex: 0 },
      sentAligned.promise,
    );
    writer.finishOutput(3n);
    writer.finishInput(3n);
    let done = false;
    void result.then(() => {
      done = true;
    });
    sentAligned.resolve([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(done).toBe(false);
    const overtaken = [bytes(7, 8), bytes(9)];
    timedOut.resolve(overtaken);
    const state = await result;
    expect(overtaken.every((buffer) => buffer.isRecycled())).toBe(true);
    expect(state.resultSubpartitionState).toEqual([{ info, data: Uint8Array.of(7, 8, 9) }]);
    expect(state.inputChannelState).toEqual([]);
  });

  it("fails the checkpoint when a future rejects, and recycles what resolves for a void one", async () => {
    const writer = new ChannelStateWriterImpl("T");
    writer.start(4n);
    const result = writer.getWriteResult(4n);
    const lost = deferred<readonly NetworkBuffer[]>();
    writer.addOutputDataFuture(4n, info, lost.promise);
    writer.finishOutput(4n);
    writer.finishInput(4n);
    lost.reject(new CancelledError("subpartition released"));
    await expectRejection(
      result,
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "T: the output of checkpoint 4 in subpartition 1:2 was lost: subpartition released",
    );
    const late = bytes(1);
    writer.addOutputDataFuture(4n, info, Promise.resolve([late]));
    await new Promise((resolve) => setImmediate(resolve));
    expect(late.isRecycled()).toBe(true);
  });
});

describe("ChannelStateSerializer", () => {
  it("round-trips channel state and rejects damaged files, naming them", () => {
    const state = {
      inputChannelState: [
        { info: { gateIndex: 0, channelIndex: 3 }, data: Uint8Array.of(1, 2, 3) },
        { info: { gateIndex: 1, channelIndex: 0 }, data: new Uint8Array(0) },
      ],
      resultSubpartitionState: [
        { info: { partitionIndex: 2, subpartitionIndex: 1 }, data: Uint8Array.of(4) },
      ],
    };
    const file = ChannelStateSerializer.serialize(state);
    expect(ChannelStateSerializer.deserialize(file, "f")).toEqual(state);
    expectError(
      () => ChannelStateSerializer.deserialize(file.subarray(0, file.length - 1), "cut"),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "cut: the entry at byte",
    );
    const other = Buffer.from(file);
    other.writeInt32BE(2, 4);
    expectError(
      () => ChannelStateSerializer.deserialize(other, "newer"),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "newer is a channel state file of version 2",
    );
  });
});
