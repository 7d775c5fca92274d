import {
  CheckpointAlignment,
  CheckpointBarrier,
  DEFAULT_CHECKPOINT_OPTIONS,
  EndOfPartitionEvent,
  frameRecord,
  type NetworkBuffer,
} from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import type {
  PipelinedResultPartition,
  RemoteInputChannel,
  SingleInputGate,
} from "@sluice/network/plugin";
import type { ChannelStateWriter, ResultSubpartitionInfo } from "@sluice/runtime-api";
import { InProcessCluster } from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

// The output side of the aligned-checkpoint timeout over TCP: a credit-starved remote consumer
// (its one exclusive and one floating buffer full, and it reads nothing) leaves the producer's
// timeoutable aligned barrier queued behind data. At the timeout the barrier turns unaligned and,
// as a priority event, needs no credit: it reaches the consumer ahead of everything, and the
// data it overtook is the producer's output channel state.
const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.network.max": "1mb",
  "taskmanager.memory.segment-size": "4kb",
  "taskmanager.network.memory.buffers-per-channel": 1,
  "taskmanager.network.memory.floating-buffers-per-gate": 1,
  "taskmanager.network.partition-request-timeout": "2s",
};

const RECORDS = 12;
/** A framed record of 1000 bytes holding its index: four fit a 4 KiB buffer. */
function recordBytes(index: number): Uint8Array {
  const payload = new Uint8Array(996).fill(index);
  return frameRecord(payload);
}

/** Copies what the producer's subpartitions hand over (the real writer is the runtime's). */
class CollectingWriter implements ChannelStateWriter {
  readonly output: number[] = [];
  settled = 0;
  addInputData(_id: bigint, _channel: unknown, data: readonly NetworkBuffer[]): void {
    for (const buffer of data) buffer.recycleBuffer();
  }
  addOutputData(_id: bigint, _info: ResultSubpartitionInfo, data: readonly NetworkBuffer[]): void {
    for (const buffer of data) {
      this.output.push(...buffer.readableView());
      buffer.recycleBuffer();
    }
  }
  addOutputDataFuture(
    id: bigint,
    info: ResultSubpartitionInfo,
    data: Promise<readonly NetworkBuffer[]>,
  ): void {
    void data.then((buffers) => {
      this.addOutputData(id, info, buffers);
      this.settled++;
    });
  }
}

describe("the output-side alignment timeout over TCP", () => {
  let cluster: InProcessCluster;

  afterEach(async () => {
    await cluster.close();
  });

  it("sends a barrier stuck behind data of a credit-starved channel unaligned after the timeout, ahead of the data, which becomes output channel state and still arrives once, in order", async () => {
    cluster = new InProcessCluster(TCP_PLUGIN, config);
    const producerExecutor = await cluster.startExecutor();
    const consumerExecutor = await cluster.startExecutor();
    const { producers, consumers } = await cluster.deployWithoutRunning(
      { producers: 1, consumers: 1, plan: { records: 0, padding: 0 } },
      producerExecutor,
      consumerExecutor,
    );
    const partition = producers[0]?.partitions[0] as unknown as PipelinedResultPartition;
    const gate = consumers[0]?.gates[0] as SingleInputGate;
    const writer = new CollectingWriter();
    partition.setChannelStateWriter(writer);

    for (let i = 0; i < RECORDS; i++) partition.emitRecord(recordBytes(i), 0);
    partition.flushAll();
    // The consumer reads nothing: once both its buffers hold data, no credit is left.
    const channel = gate.getChannel(0) as RemoteInputChannel;
    await waitFor(
      () => channel.getNumberOfQueuedBuffers() === 2 && channel.getNumberOfAvailableBuffers() === 0,
      { what: "the consumer's buffers are full", timeoutMs: 20_000 },
    );
    const queuedBytes = partition.getNumberOfQueuedBytes();
    expect(queuedBytes).toBeGreaterThan(0);

    const barrier = new CheckpointBarrier(1n, BigInt(Date.now()), {
      ...DEFAULT_CHECKPOINT_OPTIONS,
      alignedCheckpointTimeout: 50n,
    });
    partition.broadcastEvent(barrier);
    partition.flushAll();
    await waitFor(() => writer.settled === 1, { what: "the barrier times out", timeoutMs: 20_000 });
    await waitFor(() => gate.hasPriorityEvent(), {
      what: "the priority barrier arrives",
      timeoutMs: 20_000,
    });
    expect(writer.output).toHaveLength(queuedBytes);

    const first = gate.pollNext();
    expect(first?.event).toBeInstanceOf(CheckpointBarrier);
    const received = first?.event as CheckpointBarrier;
    expect(received.id).toBe(1n);
    expect(received.options.alignment).toBe(CheckpointAlignment.UNALIGNED);

    // Everything follows the barrier, each record once, in order; the overtaken bytes are the
    // tail of that stream.
    partition.finish();
    const bytes: number[] = [];
    let ended = false;
    await waitFor(
      () => {
        for (let next = gate.pollNext(); next !== undefined; next = gate.pollNext()) {
          if (next.buffer !== undefined) {
            bytes.push(...next.buffer.readableView());
            next.buffer.recycleBuffer();
          } else if (next.event === EndOfPartitionEvent.INSTANCE) {
            ended = true;
          }
        }
        return ended;
      },
      { what: "the end of the partition", timeoutMs: 20_000 },
    );
    const expected = Array.from({ length: RECORDS }, (_, i) => [...recordBytes(i)]).flat();
    expect(bytes).toEqual(expected);
    expect(bytes.slice(bytes.length - queuedBytes)).toEqual(writer.output);
  });
});
