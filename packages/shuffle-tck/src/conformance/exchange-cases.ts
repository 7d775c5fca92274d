import { expect, it } from "vitest";
import { oneToOne } from "../exchange.js";
import { consumedOf, producedOf } from "../kit-results.js";
import {
  expectBlocked,
  expectExitByThemselves,
  expectPartitionsReleased,
  only,
  type TckCluster,
} from "./tck-cluster.js";

/** Data exchanges that must arrive exactly once, in order, under backpressure and late starts. */
export function exchangeCases(cluster: () => TckCluster, records: number): void {
  it("delivers keyed records exactly once and in order per channel between two processes", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    const { execution } = await cluster().deploy(
      { producers: 2, consumers: 4, plan: { records, padding: 20 } },
      producer,
      consumer,
    );
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    const consumed = consumedOf(result);
    for (const c of consumed) expect(c.violations).toEqual([]);
    for (let p = 0; p < 2; p++) {
      expect(consumed.reduce((sum, c) => sum + (c.counts[p] ?? 0), 0)).toBe(records);
      expect(producedOf(result)[p]?.emitted).toBe(records);
    }
    await expectPartitionsReleased(producer);
    await expectExitByThemselves(producer, consumer);
  }, 120_000);

  it("stops a producer at its bound under a stalled consumer while other channels on the same connection keep flowing", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    const total = 200_000;
    const stalled = await cluster().deploy(
      oneToOne({ records: total, padding: 88 }, { stalled: true }),
      producer,
      consumer,
    );
    // The flowing job shares the producer's connection and must complete regardless.
    const flowing = await cluster().deploy(
      oneToOne({ records: 50_000, padding: 88 }),
      producer,
      consumer,
    );
    const flowed = await flowing.execution.terminated;
    expect(flowed.status).toBe("FINISHED");
    expect(consumedOf(flowed)[0]?.counts).toEqual([50_000]);

    const stalledProducer = only(stalled.producers).attemptId;
    await expectBlocked(producer, stalledProducer);
    const blocked = await producer.producerStatus(stalledProducer);
    // No progress while stalled: nothing to poll for, so watch a window of time.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect((await producer.producerStatus(stalledProducer)).emitted).toBe(blocked.emitted);
    expect(blocked.emitted).toBeLessThan(total);
    // Bound: what fits into the network memory of both sides, in 100-byte records.
    expect(blocked.emitted).toBeLessThan((2 * 16 * 1024 * 1024) / 100);

    await consumer.resume(only(stalled.consumers).attemptId);
    const result = await stalled.execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(producedOf(result)[0]?.backPressured).toBe(true);
    const consumed = consumedOf(result)[0];
    expect(consumed?.violations).toEqual([]);
    expect(consumed?.counts).toEqual([total]);
    await expectExitByThemselves(producer, consumer);
  }, 120_000);

  it("finds a partition that registers at its producer after the consumers asked for it", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    const { execution } = await cluster().deploy(
      { producers: 1, consumers: 2, plan: { records: 5_000, padding: 8, deployDelayMs: 500 } },
      producer,
      consumer,
    );
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    const consumed = consumedOf(result);
    expect(consumed.reduce((sum, c) => sum + (c.counts[0] ?? 0), 0)).toBe(5_000);
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("deploys consumers before their producers and updates their unknown channels", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    const { execution } = await cluster().deploy(
      {
        producers: 2,
        consumers: 2,
        plan: { records: 5_000, padding: 8 },
        order: "consumers-first",
      },
      producer,
      consumer,
    );
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    const consumed = consumedOf(result);
    for (let p = 0; p < 2; p++) {
      expect(consumed.reduce((sum, c) => sum + (c.counts[p] ?? 0), 0)).toBe(5_000);
    }
    await expectExitByThemselves(producer, consumer);
  }, 60_000);
}
