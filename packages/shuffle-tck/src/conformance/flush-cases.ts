import { expect, it } from "vitest";
import { oneToOne } from "../exchange.js";
import { expectExitByThemselves, only, type TckCluster } from "./tck-cluster.js";

/**
 * Streaming needs flushing: a record written on a quiet channel must reach its consumer within
 * the buffer timeout, with no more records behind it to fill the buffer, and an event at once.
 * Cases that fill buffers or finish the partition pass even when flush() does nothing.
 */
export function flushCases(cluster: () => TckCluster): void {
  async function loneRecordDelay(bufferTimeout: string): Promise<number> {
    const extra = { "execution.buffer-timeout.interval": bufferTimeout };
    const { producer, consumer } = await cluster().startProducerAndConsumer(extra);
    const exchange = await cluster().deploy(
      oneToOne({ records: 2, padding: 8, pauseAfter: 1 }),
      producer,
      consumer,
    );
    const producerAttempt = only(exchange.producers).attemptId;
    const consumerAttempt = only(exchange.consumers).attemptId;
    // The producer wrote one record and waits (its partition open, its buffer far from full).
    await expect
      .poll(async () => (await producer.producerStatus(producerAttempt)).emitted, {
        timeout: 20_000,
      })
      .toBe(1);
    const written = Date.now();
    await expect
      .poll(async () => (await consumer.consumerStatus(consumerAttempt)).total, {
        timeout: 5_000,
        interval: 10,
      })
      .toBe(1);
    const delay = Date.now() - written;
    await producer.resume(producerAttempt);
    expect((await exchange.execution.terminated).status).toBe("FINISHED");
    await expectExitByThemselves(producer, consumer);
    return delay;
  }

  it("delivers a lone record within the buffer timeout, without more records behind it", async () => {
    const delay = await loneRecordDelay("200ms");
    expect(delay).toBeLessThan(200 + 2_000);
  }, 60_000);

  it("delivers a lone record at once when the buffer timeout is 0", async () => {
    const delay = await loneRecordDelay("0ms");
    expect(delay).toBeLessThan(2_000);
  }, 60_000);

  it("delivers an event broadcast mid-stream at once, with buffer flushing disabled", async () => {
    const extra = { "execution.buffer-timeout.enabled": false };
    const { producer, consumer } = await cluster().startProducerAndConsumer(extra);
    const exchange = await cluster().deploy(
      oneToOne({ records: 2, padding: 8, pauseAfter: 1, eventAtPause: true }),
      producer,
      consumer,
    );
    const consumerAttempt = only(exchange.consumers).attemptId;
    // The event follows the record: both arrive, although no buffer filled and no timer flushed.
    await expect
      .poll(async () => await consumer.consumerStatus(consumerAttempt), { timeout: 5_000 })
      .toMatchObject({ total: 1, events: 1 });
    await producer.resume(only(exchange.producers).attemptId);
    expect((await exchange.execution.terminated).status).toBe("FINISHED");
    await expectExitByThemselves(producer, consumer);
  }, 60_000);
}
