import { ResultPartitionID } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import { afterEach, describe, expect, it } from "vitest";
import { SlotThreads } from "./test-support/slot-threads.js";

/** 32 KiB of 4 KiB segments per test: small enough that back-pressure comes quickly. */
const SEGMENTS = 64;
const SEGMENT_SIZE = 4096;

let threads: SlotThreads | undefined;
afterEach(async () => {
  await threads?.terminate();
  threads = undefined;
});

function start(): SlotThreads {
  threads = new SlotThreads(SEGMENTS, SEGMENT_SIZE);
  return threads;
}

/** Every segment is free and no thread is guaranteed any: nothing leaked, nothing double-freed. */
function expectEverySegmentBack(slots: SlotThreads): void {
  expect(slots.memory.getNumberOfFreeSegments()).toBe(SEGMENTS);
  expect(slots.memory.getNumberOfRequiredSegments()).toBe(0);
  for (let index = 0; index < SEGMENTS; index++)
    expect(slots.memory.ownerOfSegment(index)).toBe(-1);
}

describe("a local channel between two slot threads", () => {
  it("delivers every record of another thread's subpartition exactly once and in order, and every segment comes back", async () => {
    const slots = start();
    const producer = await slots.start(1);
    const consumer = await slots.start(2);
    const partition = new ResultPartitionID().toString();
    const records = 100_000;
    const [produced, consumed] = await Promise.all([
      slots.produce(producer, "p", partition, { records, payload: 96, subpartitions: 2 }),
      Promise.all([
        slots.consume(consumer, "c0", partition, { subpartitionIndex: 0, subpartitions: 2 }),
        slots.consume(consumer, "c1", partition, { subpartitionIndex: 1, subpartitions: 2 }),
      ]),
    ]);
    expect(produced).toEqual({ emitted: records, backPressured: expect.any(Number) });
    for (const result of consumed) {
      expect(result).toEqual({ received: records / 2, outOfOrder: 0, leftover: 0 });
    }
    expect((await slots.pool(consumer)).channels).toEqual({ views: 0, readers: 0 });
    expect((await slots.pool(producer)).channels).toEqual({ views: 0, readers: 0 });
    await slots.close();
    expectEverySegmentBack(slots);
  }, 120_000);

  it("holds back only the channel of a stalled consumer thread, with its memory bounded, and lets it finish once it reads again", async () => {
    const slots = start();
    const producer = await slots.start(1);
    const consumer = await slots.start(2);
    const stalledPartition = new ResultPartitionID().toString();
    const flowingPartition = new ResultPartitionID().toString();
    const records = 20_000;
    const stalledProducer = slots.produce(producer, "stalled", stalledPartition, {
      records,
      payload: 200,
      maxBuffers: 12,
      maxBuffersPerChannel: 8,
    });
    const blocked = producer.next((m) => m.kind === "progress" && m.name === "stalled");
    const stalledConsumer = slots.consume(consumer, "stalled", stalledPartition, {
      stallAfter: 100,
    });
    await consumer.next((m) => m.kind === "stalled");
    const progress = await blocked;
    // The same two threads move another partition to its end meanwhile.
    const [flowed, read] = await Promise.all([
      slots.produce(producer, "flowing", flowingPartition, { records, payload: 200 }),
      slots.consume(consumer, "flowing", flowingPartition),
    ]);
    expect(flowed.emitted).toBe(records);
    expect(read).toEqual({ received: records, outOfOrder: 0, leftover: 0 });
    // The stalled channel's producer waits, holding no more than its pool may.
    const pool = progress.pool as { free: number; total: number };
    expect(progress.emitted as number).toBeLessThan(records);
    expect(pool.total - pool.free).toBeLessThanOrEqual(12 + 3);
    consumer.post({ kind: "resume", name: "stalled" });
    expect(await stalledConsumer).toEqual({ received: records, outOfOrder: 0, leftover: 0 });
    expect((await stalledProducer).emitted).toBe(records);
    await slots.close();
    expectEverySegmentBack(slots);
  }, 120_000);

  it("recycles what a consumer thread held when that thread dies: the producer sees its partition released, and every segment comes back", async () => {
    const slots = start();
    const producer = await slots.start(1);
    const consumer = await slots.start(2);
    const partition = new ResultPartitionID().toString();
    const produced = slots.produce(producer, "p", partition, {
      records: 1_000_000,
      payload: 500,
      maxBuffers: 16,
      maxBuffersPerChannel: 10,
    });
    void slots.consume(consumer, "c", partition, { holdBuffers: 4 }).catch(() => undefined);
    await consumer.next((m) => m.kind === "holding");
    await slots.kill(consumer, "the consumer's thread crashed");
    const result = await produced;
    expect(result.failed?.code).toBe("SLUICE_ERR_CANCELLED");
    await waitFor(
      async () => ((await slots.pool(producer)).channels as { readers: number }).readers === 0,
      {
        what: "the producer's reader of the dead thread gone",
      },
    );
    await slots.close();
    expectEverySegmentBack(slots);
  }, 120_000);

  it("fails the consumer's channel with the producer thread's death, and returns the dead thread's segments, those the consumer held included", async () => {
    const slots = start();
    const producer = await slots.start(1);
    const consumer = await slots.start(2);
    const partition = new ResultPartitionID().toString();
    void slots
      .produce(producer, "p", partition, { records: 1_000_000, payload: 500 })
      .catch(() => undefined);
    const consumed = slots.consume(consumer, "c", partition, { holdBuffers: 4 });
    await consumer.next((m) => m.kind === "holding");
    await slots.kill(producer, "the producer's thread crashed");
    const result = await consumed;
    expect(result.failed?.code).toBe("SLUICE_ERR_PRODUCER_FAILED");
    expect(result.failed?.message).toContain("the producer's thread crashed");
    await slots.close();
    expectEverySegmentBack(slots);
  }, 120_000);
});
