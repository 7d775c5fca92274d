import {
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfData,
  NetworkBufferPool,
  StopMode,
  StringSerializer,
} from "@sluice/core";
import {
  type PipelinedResultPartition,
  ResultPartitionManager,
  type SingleInputGate,
} from "@sluice/network/plugin";
import {
  buildLocalInputChannel,
  buildPipelinedResultPartition,
  buildSingleInputGate,
} from "@sluice/network/testing";
import { afterEach, describe, expect, it } from "vitest";
import { RecordReader } from "../io/record-reader.js";
import { encodeString } from "../io/test-support/local-wiring.js";
import type { CheckpointMetrics } from "../messages/checkpoint-metrics.js";
import { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { CheckpointBarrierHandler } from "./checkpoint-barrier-handler.js";
import { CheckpointedInputGate } from "./checkpointed-input-gate.js";
import { createCheckpointBarrierHandler } from "./create-checkpoint-barrier-handler.js";
import { SingleCheckpointBarrierHandler } from "./single-checkpoint-barrier-handler.js";
import {
  barrier,
  buffer,
  endOfPartition,
  ScriptedInputGate,
} from "./test-support/scripted-input-gate.js";
import { ValidatingCheckpointableTask } from "./test-support/validating-checkpointable-task.js";

const serializer = new StringSerializer();

/** `producers` producers of one subpartition each, read by one gate through local channels. */
function gateOverProducers(
  pool: NetworkBufferPool,
  partitionManager: ResultPartitionManager,
  gateIndex: number,
  producers: number,
): { gate: SingleInputGate; writers: PipelinedResultPartition[] } {
  const writers = Array.from({ length: producers }, (_, p) =>
    buildPipelinedResultPartition({
      networkBufferPool: pool,
      partitionManager,
      requiredBuffers: 2,
      maxBuffers: 8,
      owningTaskName: `producer ${gateIndex}.${p}`,
    }),
  );
  const gate = buildSingleInputGate({
    networkBufferPool: pool,
    maxBuffers: 4,
    owningTaskName: "two-input task",
    gateIndex,
    numberOfInputChannels: producers,
  });
  writers.forEach((writer, i) => {
    gate.setInputChannel(
      buildLocalInputChannel({
        gate,
        partitionId: writer.partitionId,
        channelIndex: i,
        partitionManager,
        backoff: { initialMs: 10, maxMs: 100 },
      }),
    );
  });
  gate.setup();
  gate.requestPartitions();
  return { gate, writers };
}

function emit(writer: PipelinedResultPartition, values: string[]): void {
  for (const value of values) writer.emitRecord(encodeString(value), 0);
  writer.flushAll();
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A task's abort that fails the test: these checkpoints must complete. */
function mustNotAbort(id: bigint): never {
  throw new Error(`checkpoint ${id} must not abort`);
}

/**
 * A reader per gate, each through its own CheckpointedInputGate over the one `handler`, and
 * `drain`, which polls them all for ten event-loop turns, collecting the records in `seen`.
 */
function readersOver(
  handler: CheckpointBarrierHandler,
  gates: readonly SingleInputGate[],
  seen: string[],
): { readers: RecordReader<string>[]; drain: () => Promise<void> } {
  const readers = gates.map(
    (gate) => new RecordReader(new CheckpointedInputGate([gate], handler), serializer),
  );
  const drain = async () => {
    for (let round = 0; round < 10; round++) {
      await turn();
      for (const reader of readers) reader.pollRecords((r) => seen.push(r));
    }
  };
  return { readers, drain };
}

describe("CheckpointedInputGate", () => {
  let pool: NetworkBufferPool | undefined;

  afterEach(() => {
    if (pool === undefined) return;
    pool.destroy();
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(pool.totalNumberOfMemorySegments);
    pool = undefined;
  });

  it("aligns a two-input task over both gates: the snapshot sees exactly the records before the barrier", async () => {
    pool = new NetworkBufferPool(64, 256);
    const manager = new ResultPartitionManager();
    const left = gateOverProducers(pool, manager, 0, 2);
    const right = gateOverProducers(pool, manager, 1, 1);
    const seen: string[] = [];
    const snapshots: string[][] = [];
    const metrics: CheckpointMetrics[] = [];
    const handler = createCheckpointBarrierHandler({
      mode: CheckpointingMode.EXACTLY_ONCE,
      taskName: "two-input task",
      inputs: [left.gate, right.gate],
      task: {
        triggerCheckpointOnBarrier: (_barrier, m) => {
          snapshots.push([...seen].sort());
          metrics.push(m);
        },
        abortCheckpointOnBarrier: mustNotAbort,
      },
    });
    const { readers, drain } = readersOver(handler, [left.gate, right.gate], seen);
    const [l0, l1] = left.writers as [PipelinedResultPartition, PipelinedResultPartition];
    const [r0] = right.writers as [PipelinedResultPartition];
    emit(l0, ["l0-before"]);
    l0.broadcastEvent(new CheckpointBarrier(1n, 0n));
    emit(l0, ["l0-after"]);
    emit(l1, ["l1-before"]);
    l1.broadcastEvent(new CheckpointBarrier(1n, 0n));
    emit(l1, ["l1-after"]);
    emit(r0, ["r0-before"]);
    await drain();
    // The left gate is aligned, but the right gate's barrier is missing: its data after the
    // barrier stays upstream.
    expect(snapshots).toEqual([]);
    expect([...seen].sort()).toEqual(["l0-before", "l1-before", "r0-before"]);
    expect(handler.getBytesProcessedDuringAlignment()).toBeGreaterThan(0);
    r0.broadcastEvent(new CheckpointBarrier(1n, 0n));
    emit(r0, ["r0-after"]);
    await drain();
    expect(snapshots).toEqual([["l0-before", "l1-before", "r0-before"]]);
    expect(metrics[0]?.bytesProcessedDuringAlignment).toBeGreaterThan(0);
    expect([...seen].sort()).toEqual([
      "l0-after",
      "l0-before",
      "l1-after",
      "l1-before",
      "r0-after",
      "r0-before",
    ]);
    for (const writer of [l0, l1, r0]) writer.finish();
    for (let round = 0; round < 20; round++) {
      await turn();
      for (const reader of readers) reader.pollRecords((r) => seen.push(r));
      if (readers.every((reader) => reader.isFinished())) break;
    }
    expect(readers.map((reader) => reader.isFinished())).toEqual([true, true]);
    expect(handler.getNumOpenChannels()).toBe(0);
    for (const reader of readers) reader.close();
    await left.gate.close();
    await right.gate.close();
    for (const writer of [l0, l1, r0]) writer.close();
  });

  it("acknowledges a channel's EndOfData to its producer once the task got every record before it, over local channels", async () => {
    pool = new NetworkBufferPool(64, 256);
    const manager = new ResultPartitionManager();
    const { gate, writers } = gateOverProducers(pool, manager, 0, 2);
    const [p0, p1] = writers as [PipelinedResultPartition, PipelinedResultPartition];
    const handler = createCheckpointBarrierHandler({
      mode: CheckpointingMode.EXACTLY_ONCE,
      taskName: "consumer",
      inputs: [gate],
      task: { triggerCheckpointOnBarrier: () => {}, abortCheckpointOnBarrier: mustNotAbort },
    });
    const reader = new RecordReader(new CheckpointedInputGate([gate], handler), serializer);
    const processed = [false, false];
    writers.forEach((writer, i) => {
      void writer.getAllDataProcessedFuture().then(() => {
        processed[i] = true;
      });
    });
    emit(p0, ["a", "b", "c"]);
    p0.broadcastEvent(new EndOfData(StopMode.DRAIN));
    p0.flushAll();
    const seen: string[] = [];
    // One record a poll: the EndOfData behind them is not read before the last one was handed out.
    for (let round = 0; round < 10 && seen.length < 3; round++) {
      await turn();
      expect(processed[0], `with ${seen.length} of 3 records handed out`).toBe(false);
      reader.pollRecords((r) => seen.push(r), 1);
    }
    expect(seen).toEqual(["a", "b", "c"]);
    for (let round = 0; round < 10 && !processed[0]; round++) {
      await turn();
      reader.pollRecords((r) => seen.push(r));
    }
    expect(processed).toEqual([true, false]);
    p1.broadcastEvent(new EndOfData(StopMode.DRAIN));
    p1.flushAll();
    for (let round = 0; round < 10 && !processed[1]; round++) {
      await turn();
      reader.pollRecords((r) => seen.push(r));
    }
    expect(processed).toEqual([true, true]);
    for (const writer of writers) writer.finish();
    for (let round = 0; round < 20 && !reader.isFinished(); round++) {
      await turn();
      reader.pollToEndOfPartition();
    }
    reader.close();
    await gate.close();
    for (const writer of writers) writer.close();
  });

  it("tracks at-least-once barriers over both gates without holding back any data", async () => {
    pool = new NetworkBufferPool(64, 256);
    const manager = new ResultPartitionManager();
    const left = gateOverProducers(pool, manager, 0, 1);
    const right = gateOverProducers(pool, manager, 1, 1);
    const seen: string[] = [];
    const triggered: bigint[] = [];
    const handler = createCheckpointBarrierHandler({
      mode: CheckpointingMode.AT_LEAST_ONCE,
      taskName: "two-input task",
      inputs: [left.gate, right.gate],
      task: {
        triggerCheckpointOnBarrier: (barrier) => triggered.push(barrier.id),
        abortCheckpointOnBarrier: mustNotAbort,
      },
    });
    const { readers, drain } = readersOver(handler, [left.gate, right.gate], seen);
    const atLeastOnce = new CheckpointBarrier(1n, 0n, {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignment: CheckpointAlignment.AT_LEAST_ONCE,
    });
    const [l0] = left.writers as [PipelinedResultPartition];
    const [r0] = right.writers as [PipelinedResultPartition];
    l0.broadcastEvent(atLeastOnce);
    emit(l0, ["l0-after"]);
    await drain();
    // Not held: the record after the barrier is read before the other gate's barrier came.
    expect(seen).toEqual(["l0-after"]);
    expect(triggered).toEqual([]);
    r0.broadcastEvent(atLeastOnce);
    await drain();
    expect(triggered).toEqual([1n]);
    for (const writer of [l0, r0]) writer.finish();
    await drain();
    expect(readers.map((reader) => reader.isFinished())).toEqual([true, true]);
    for (const reader of readers) reader.close();
    await left.gate.close();
    await right.gate.close();
    for (const writer of [l0, r0]) writer.close();
  });

  it("reads several gates of one input in turn and numbers their channels one after the other", async () => {
    const first = new ScriptedInputGate(2, [buffer(0), buffer(1), buffer(0), endOfPartition(0)]);
    const second = new ScriptedInputGate(3, [buffer(2), buffer(0), endOfPartition(1)]);
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [first, second],
      task: new ValidatingCheckpointableTask(),
    });
    const input = new CheckpointedInputGate([first, second], handler);
    expect(input.numberOfInputChannels).toBe(5);
    const channels: number[] = [];
    for (let next = input.pollNext(); next !== undefined; next = input.pollNext()) {
      channels.push(next.channelIndex);
    }
    // Alternating gates; the second gate's channels follow the first gate's two.
    expect(channels).toEqual([0, 4, 1, 2, 0, 3, 0]);
    expect(input.getChannelInfo(3)).toEqual({ gateIndex: 1, channelIndex: 1 });
    expect(handler.getNumOpenChannels()).toBe(3);
    expect(() => input.getChannelInfo(5)).toThrow(/no input channel 5/);
    await first.close();
    await second.close();
  });

  it("aligns over gates whose inputs list them in another order than the handler", async () => {
    // As Flink's InputProcessorUtilTest: the first input's gate is the handler's second gate.
    const small = new ScriptedInputGate(2);
    const large = new ScriptedInputGate(4);
    const task = new ValidatingCheckpointableTask();
    const handler = createCheckpointBarrierHandler({
      mode: CheckpointingMode.EXACTLY_ONCE,
      taskName: "t",
      inputs: [small, large],
      task,
    });
    const inputs = [
      new CheckpointedInputGate([large], handler),
      new CheckpointedInputGate([small], handler),
    ];
    for (let channel = 0; channel < 4; channel++) large.add(barrier(1, channel));
    for (let channel = 0; channel < 2; channel++) small.add(barrier(1, channel));
    for (const input of inputs) while (input.pollNext() !== undefined) {}
    expect(task.triggered).toEqual([1n]);
    expect(large.getBlockedChannels()).toEqual([]);
    expect(small.getBlockedChannels()).toEqual([]);
    expect(large.resumes + small.resumes).toBe(6);
  });

  it("reports availability only for gates still open, so a finished gate causes no busy loop", async () => {
    const done = new ScriptedInputGate(1, [endOfPartition(0)]);
    const open = new SingleInputGateStub();
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [done, open],
      task: new ValidatingCheckpointableTask(),
    });
    const input = new CheckpointedInputGate([done, open], handler);
    expect(input.pollNext()?.event?.kind).toBe("EndOfPartition");
    expect(input.pollNext()).toBeUndefined();
    expect(input.isAvailable()).toBe(false);
    let woken = false;
    void input.getAvailableFuture().then(() => {
      woken = true;
    });
    await turn();
    expect(woken).toBe(false);
    open.makeAvailable();
    await turn();
    expect(woken).toBe(true);
  });

  it("refuses a gate its barrier handler does not align over", () => {
    const known = new ScriptedInputGate(1);
    const handler = new SingleCheckpointBarrierHandler({
      taskName: "t",
      inputs: [known],
      task: new ValidatingCheckpointableTask(),
    });
    expect(() => new CheckpointedInputGate([new ScriptedInputGate(1)], handler)).toThrow(
      expect.objectContaining({ code: "SLUICE_ERR_INVALID_ARGUMENT" }),
    );
  });
});

/** A gate that has nothing until told, with a real pending availability future. */
class SingleInputGateStub extends ScriptedInputGate {
  private resolve: (() => void) | undefined;
  private readonly future = new Promise<void>((r) => {
    this.resolve = r;
  });
  private available = false;

  constructor() {
    super(1);
  }

  makeAvailable(): void {
    this.available = true;
    this.resolve?.();
  }

  override isAvailable(): boolean {
    return this.available;
  }

  override getAvailableFuture(): Promise<void> {
    return this.available ? Promise.resolve() : this.future;
  }
}
