import {
  CancelCheckpointMarker,
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  IntermediateDataSetID,
  NetworkBufferPool,
  ResultPartitionID,
  StringSerializer,
} from "@sluice/core";
import {
  LocalInputChannel,
  ResultPartition,
  ResultPartitionManager,
  SingleInputGate,
} from "@sluice/network";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { PollStatus, RecordReader } from "../io/record-reader.js";
import {
  AlignedCheckpointBarrierHandler,
  type CheckpointBarrierHandler,
  CheckpointBarrierTracker,
} from "./checkpoint-barrier-handler.js";
import "@sluice/core/testing";

const serializer = new StringSerializer();

function encode(value: string): Uint8Array {
  const bytes = Buffer.from(value, "utf8");
  const framed = Buffer.alloc(4 + bytes.length);
  framed.writeInt32BE(bytes.length, 0);
  bytes.copy(framed, 4);
  return framed;
}

/** Two producers, one subpartition each, read by one gate through local channels. */
function twoProducers(pool: NetworkBufferPool) {
  const manager = new ResultPartitionManager();
  const producers = [0, 1].map(
    (p) =>
      new ResultPartition({
        owningTaskName: `producer ${p}`,
        partitionIndex: 0,
        partitionId: new ResultPartitionID(),
        partitionType: ResultPartitionType.PIPELINED_BOUNDED,
        numberOfSubpartitions: 1,
        partitionManager: manager,
        bufferPoolFactory: () => pool.createBufferPool(2, 8, { numberOfSubpartitions: 1 }),
      }),
  );
  const gate = new SingleInputGate({
    owningTaskName: "consumer",
    gateIndex: 0,
    consumedResultId: new IntermediateDataSetID(),
    consumedPartitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfInputChannels: 2,
    bufferPoolFactory: () => pool.createBufferPool(1, 4),
  });
  producers.forEach((producer, i) => {
    gate.setInputChannel(
      new LocalInputChannel(gate, i, producer.partitionId, 0, manager, {
        initialMs: 10,
        maxMs: 100,
      }),
    );
    producer.setup();
  });
  gate.setup();
  gate.requestPartitions();
  return { producers, gate };
}

/** Polls until nothing more is available right now; returns the records seen. */
async function drain(reader: RecordReader<string>, into: string[]): Promise<PollStatus> {
  let status: PollStatus = PollStatus.MORE_AVAILABLE;
  for (let turn = 0; turn < 10; turn++) {
    await new Promise((r) => setImmediate(r));
    status = reader.pollRecords((r) => into.push(r));
    if (status === PollStatus.END_OF_INPUT) break;
  }
  return status;
}

/**
 * Finishes `finishing`, checks that the reader then reaches the end of its input, and closes the
 * reader, the gate and every producer in `all`.
 */
async function finishAndClose(
  finishing: readonly ResultPartition[],
  gate: SingleInputGate,
  reader: RecordReader<string>,
  seen: string[],
  all: readonly ResultPartition[] = finishing,
): Promise<void> {
  for (const producer of finishing) producer.finish();
  expect(await drain(reader, seen)).toBe(PollStatus.END_OF_INPUT);
  reader.close();
  await gate.close();
  for (const producer of all) producer.close();
}

function emit(producer: ResultPartition, values: string[]): void {
  for (const value of values) producer.emitRecord(encode(value), 0);
  producer.flushAll();
}

describe("checkpoint barrier handling", () => {
  let pool: NetworkBufferPool;

  afterEach(() => {
    pool.destroy();
    expect(pool).toHaveAllSegmentsAvailable();
  });

  function reader(gate: SingleInputGate, handler: () => CheckpointBarrierHandler) {
    let h: CheckpointBarrierHandler | undefined;
    const r = new RecordReader(gate, serializer, {
      onEvent: (event, channel) => h?.handleEvent(event, channel),
      onEndOfPartition: (channel) => h?.handleEndOfPartition(channel),
    });
    h = handler();
    return r;
  }

  it("aligns: a channel that delivered the barrier is held back until every channel did, then the checkpoint triggers", async () => {
    pool = new NetworkBufferPool(64, 256);
    const { producers, gate } = twoProducers(pool);
    const [p0, p1] = producers as [ResultPartition, ResultPartition];
    const triggered: bigint[] = [];
    const seen: string[] = [];
    const r = reader(
      gate,
      () =>
        new AlignedCheckpointBarrierHandler(gate, {
          triggerCheckpoint: (b) => triggered.push(b.id),
        }),
    );
    emit(p0, ["p0-before"]);
    p0.broadcastEvent(new CheckpointBarrier(1n, 0n));
    emit(p0, ["p0-after"]);
    emit(p1, ["p1-before"]);
    await drain(r, seen);
    // p0's data after its barrier stays upstream while p1's barrier is missing.
    expect(seen.sort()).toEqual(["p0-before", "p1-before"]);
    expect(triggered).toEqual([]);
    p1.broadcastEvent(new CheckpointBarrier(1n, 0n));
    emit(p1, ["p1-after"]);
    await drain(r, seen);
    expect(triggered).toEqual([1n]);
    expect(seen.sort()).toEqual(["p0-after", "p0-before", "p1-after", "p1-before"]);
    await finishAndClose(producers, gate, r, seen);
  });

  it("aborts an alignment on a cancel marker and lets the held channel continue", async () => {
    pool = new NetworkBufferPool(64, 256);
    const { producers, gate } = twoProducers(pool);
    const [p0, p1] = producers as [ResultPartition, ResultPartition];
    const aborted: bigint[] = [];
    const seen: string[] = [];
    const r = reader(
      gate,
      () =>
        new AlignedCheckpointBarrierHandler(gate, {
          triggerCheckpoint: () => {
            throw new Error("must not trigger");
          },
          abortCheckpoint: (id) => aborted.push(id),
        }),
    );
    p0.broadcastEvent(new CheckpointBarrier(5n, 0n));
    emit(p0, ["p0-after"]);
    await drain(r, seen);
    expect(seen).toEqual([]);
    p1.broadcastEvent(new CancelCheckpointMarker(5n));
    await drain(r, seen);
    expect(aborted).toEqual([5n]);
    expect(seen).toEqual(["p0-after"]);
    await finishAndClose(producers, gate, r, seen);
  });

  it("completes an alignment when the missing channel ends instead of sending the barrier", async () => {
    pool = new NetworkBufferPool(64, 256);
    const { producers, gate } = twoProducers(pool);
    const [p0, p1] = producers as [ResultPartition, ResultPartition];
    const triggered: bigint[] = [];
    const r = reader(
      gate,
      () =>
        new AlignedCheckpointBarrierHandler(gate, {
          triggerCheckpoint: (b) => triggered.push(b.id),
        }),
    );
    const seen: string[] = [];
    p0.broadcastEvent(new CheckpointBarrier(2n, 0n));
    p1.finish();
    await drain(r, seen);
    expect(triggered).toEqual([2n]);
    await finishAndClose([p0], gate, r, seen, producers);
  });

  it("tracks at-least-once barriers without blocking any channel", async () => {
    pool = new NetworkBufferPool(64, 256);
    const { producers, gate } = twoProducers(pool);
    const [p0, p1] = producers as [ResultPartition, ResultPartition];
    const triggered: bigint[] = [];
    const seen: string[] = [];
    const r = reader(
      gate,
      () => new CheckpointBarrierTracker(gate, { triggerCheckpoint: (b) => triggered.push(b.id) }),
    );
    const atLeastOnce = {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignment: CheckpointAlignment.AT_LEAST_ONCE,
    };
    p0.broadcastEvent(new CheckpointBarrier(3n, 0n, atLeastOnce));
    emit(p0, ["p0-after"]);
    await drain(r, seen);
    // Not blocked: data after the barrier flows before the other channel's barrier.
    expect(seen).toEqual(["p0-after"]);
    expect(triggered).toEqual([]);
    p1.broadcastEvent(new CheckpointBarrier(3n, 0n, atLeastOnce));
    await drain(r, seen);
    expect(triggered).toEqual([3n]);
    await finishAndClose(producers, gate, r, seen);
  });
});
