import { ErrorCodes } from "@sluice/core";
import { expect, it } from "vitest";
import { oneToOne } from "../exchange.js";
import {
  expectBlocked,
  expectExitByThemselves,
  expectPartitionsReleased,
  expectReceived,
  expectTaskState,
  only,
  type TckCluster,
} from "./tck-cluster.js";

/**
 * Failures the data plane itself must propagate. Where a case checks what a consumer sees, its
 * worker holds the job master's cancel requests, so that the job's cancellation cannot race the
 * data plane and hide what it did.
 */
export function failureCases(cluster: () => TckCluster): void {
  it("fails the consumer with the producer's error when the producer fails", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdCancels = true;
    const { execution, producers, consumers } = await cluster().deploy(
      oneToOne({
        records: 50_000,
        padding: 20,
        failAfter: 20_000,
        failMessage: "boom from the producer",
        flushEvery: 100,
      }),
      producer,
      consumer,
    );
    const sink = only(consumers);
    await expectTaskState(sink, "FAILED");
    expect(sink.failureCause?.message).toContain("boom from the producer");
    // A consequence, as Flink's ProducerFailedException: the job side reports the producer.
    expect((sink.failureCause as { code?: unknown }).code).toBe("SLUICE_ERR_PRODUCER_FAILED");
    expect(only(producers).state).toBe("FAILED");
    await consumer.releaseHeldCancels();
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Producer (1/1)#0");
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("releases the producer's partition when the consumer stops reading for good, and the producer learns of it", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    producer.holdCancels = true;
    const { producers } = await cluster().deploy(
      oneToOne({ records: 10_000_000, padding: 20 }, { cancelAfter: 10_000 }),
      producer,
      consumer,
    );
    const source = only(producers);
    await expectTaskState(source, "FAILED");
    expect(source.failureCause).toMatchObject({ code: ErrorCodes.CANCELLED });
    expect((await producer.producerStatus(source.attemptId)).emitted).toBeLessThan(10_000_000);
    await expectPartitionsReleased(producer);
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("fails every consumer with an error naming the remote when the producer process is killed", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdCancels = true;
    const { consumers } = await cluster().deploy(
      { producers: 1, consumers: 2, plan: { records: 100_000_000, padding: 20, flushEvery: 64 } },
      producer,
      consumer,
    );
    for (const sink of consumers) await expectReceived(consumer, sink.attemptId, 1);
    const killedAt = Date.now();
    producer.kill();
    for (const sink of consumers) {
      await expectTaskState(sink, "FAILED");
      expect(sink.failureCause?.message).toContain(`${producer.location.dataPort}`);
    }
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    await consumer.releaseHeldCancels();
    await expectExitByThemselves(consumer);
  }, 60_000);

  it("releases what a killed consumer held at the producer and keeps serving the other consumers", async () => {
    const [producer, doomed, healthy] = await cluster().startWorkers([
      "producer",
      "doomed-consumer",
      "healthy-consumer",
    ]);
    producer.holdCancels = true;
    const toDoomed = await cluster().deploy(
      oneToOne({ records: 10_000_000, padding: 88 }, { stallAfter: 10 }),
      producer,
      doomed,
    );
    const source = only(toDoomed.producers);
    await expectReceived(doomed, only(toDoomed.consumers).attemptId, 10);
    // The producer fills what the stalled consumer allows, then blocks.
    await expectBlocked(producer, source.attemptId);
    doomed.kill();
    await expectTaskState(source, "FAILED");
    expect(source.failureCause).toMatchObject({ code: ErrorCodes.CANCELLED });
    const toHealthy = await cluster().deploy(
      oneToOne({ records: 20_000, padding: 88 }),
      producer,
      healthy,
    );
    const result = await toHealthy.execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Consumer")?.[0]).toMatchObject({ counts: [20_000], violations: [] });
    await expectPartitionsReleased(producer);
    await producer.releaseHeldCancels();
    await expectExitByThemselves(producer, healthy);
  }, 60_000);

  it("cancels a producer that is blocked on backpressure without hanging, and the consumer learns of it", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdCancels = true;
    const { producers, consumers } = await cluster().deploy(
      oneToOne({ records: 10_000_000, padding: 88 }, { stallAfter: 10 }),
      producer,
      consumer,
    );
    const source = only(producers);
    const sink = only(consumers);
    await expectReceived(consumer, sink.attemptId, 10);
    await expectBlocked(producer, source.attemptId);
    const cancelledAt = Date.now();
    await producer.cancelTask(source.attemptId);
    await expectTaskState(source, "CANCELED");
    expect(Date.now() - cancelledAt).toBeLessThan(5_000);
    await consumer.resume(sink.attemptId);
    await expectTaskState(sink, "FAILED");
    expect(sink.failureCause).toMatchObject({ code: ErrorCodes.CANCELLED });
    expect(sink.failureCause?.message).toMatch(/cancel/i);
    await expectPartitionsReleased(producer);
    await consumer.releaseHeldCancels();
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("fails with PartitionNotFound when the partition never registers at its producer", async () => {
    // Short timeouts: the consumer retries while the producer "deploys", then gives up.
    const quick = {
      "taskmanager.network.partition-request-timeout": "1s",
      "taskmanager.network.request-backoff.max": "200ms",
    };
    const { producer, consumer } = await cluster().startProducerAndConsumer(quick);
    const started = Date.now();
    const { consumers, producers } = await cluster().deploy(
      // The producer's deployment never happens within the test.
      oneToOne({ records: 1, padding: 0, deployDelayMs: 600_000 }),
      producer,
      consumer,
    );
    const sink = only(consumers);
    await expectTaskState(sink, "FAILED");
    expect(sink.failureCause).toMatchObject({ code: ErrorCodes.PARTITION_NOT_FOUND });
    expect(sink.failureCause?.message).toContain(only(producers).attemptId.toString());
    expect(Date.now() - started).toBeLessThan(15_000);
    await expectExitByThemselves(producer, consumer);
  }, 60_000);
}
