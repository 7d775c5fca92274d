import { ErrorCodes } from "@sluice/core";
import type { ExecutionVertex } from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";
import { expect, it } from "vitest";
import { type ExchangeSpec, readerName } from "../exchange.js";
import { expectReadInFull } from "../kit-results.js";
import {
  expectExitByThemselves,
  expectPartitionFilesDeleted,
  expectReceived,
  expectTaskState,
  only,
  type TckCluster,
} from "./tck-cluster.js";
import type { WorkerProcess } from "./worker-process.js";

const RECORDS = 20_000;

/** A blocking exchange of `producers` producers writing {@link RECORDS} records each. */
function blocking(producers: number, more: Partial<ExchangeSpec> = {}): ExchangeSpec {
  return {
    producers,
    consumers: 2,
    plan: { records: RECORDS, padding: 20 },
    partitionType: ResultPartitionType.BLOCKING,
    ...more,
  };
}

/** Waits until every subtask of a vertex FINISHED. */
async function expectFinished(vertices: readonly ExecutionVertex[]): Promise<void> {
  for (const vertex of vertices) await expectTaskState(vertex, "FINISHED");
}

/**
 * The producers finished and the consumers' deployment is held at `consumer`: the partitions are
 * complete and nobody reads them yet. Returns whether the producer's worker holds them (the
 * plugin keeps blocking data in its workers, as the bundled ones do) or not (an external service).
 */
async function finishedAndUnread(
  producer: WorkerProcess,
  consumer: WorkerProcess,
  producers: readonly ExecutionVertex[],
): Promise<boolean> {
  await expectFinished(producers);
  await expect.poll(() => consumer.numberOfHeldSubmits, { timeout: 20_000 }).toBeGreaterThan(0);
  const status = await producer.status();
  expect(status.tasks, "the producer tasks ended").toBe(0);
  return status.partitions > 0;
}

/**
 * BLOCKING partitions: written once while nobody reads them, read after their producers finished
 * (the job side deploys their consumers only then), as often as consumers ask and concurrently,
 * released — files deleted — when the job ends. A lost producer worker or a damaged file must
 * fail the consumers with an error that names what is gone, never hang them or hand them wrong
 * data.
 */
export function blockingCases(cluster: () => TckCluster): void {
  it("serves a blocking partition to consumers deployed after its producers finished and ended", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdSubmits = true;
    const exchange = await cluster().deploy(blocking(2), producer, consumer);
    await finishedAndUnread(producer, consumer, exchange.producers);
    consumer.releaseHeldSubmits();
    const result = await exchange.execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expectReadInFull(result, 2, RECORDS, readerName(0));
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("keeps a blocking partition while its job runs and releases it at the job's end, deleting its files", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdSubmits = true;
    const exchange = await cluster().deploy(blocking(1, { consumers: 1 }), producer, consumer);
    if (await finishedAndUnread(producer, consumer, exchange.producers)) {
      // Held on the producer's worker: it reports the partition until the job releases it.
      expect((await producer.status()).partitions).toBe(1);
    }
    consumer.releaseHeldSubmits();
    const result = await exchange.execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.releaseErrors).toEqual([]);
    await expectPartitionFilesDeleted(producer);
    await expectExitByThemselves(producer, consumer);
  }, 60_000);

  it("serves a blocking data set twice: to a second consumer vertex deployed after the first one finished", async () => {
    const [producer, first, second] = await cluster().startWorkers([
      "producer",
      "first-reader",
      "second-reader",
    ]);
    second.holdSubmits = true;
    const exchange = await cluster().deploy(blocking(2, { readers: 2 }), producer, [first, second]);
    await expectFinished(exchange.readers[0] ?? []);
    expect(second.numberOfHeldSubmits).toBeGreaterThan(0);
    second.releaseHeldSubmits();
    const result = await exchange.execution.terminated;
    expect(result.error).toBeUndefined();
    expectReadInFull(result, 2, RECORDS, readerName(0));
    expectReadInFull(result, 2, RECORDS, readerName(1));
    await expectPartitionFilesDeleted(producer);
    await expectExitByThemselves(producer, first, second);
  }, 60_000);

  it("serves one blocking data set to two consumer vertices reading at the same time", async () => {
    const [producer, first, second] = await cluster().startWorkers([
      "producer",
      "first-reader",
      "second-reader",
    ]);
    // Each consumer subtask stops half-way: both readers are then open at once.
    const exchange = await cluster().deploy(
      blocking(2, { readers: 2, consume: { stallAfter: RECORDS / 2 } }),
      producer,
      [first, second],
    );
    const [firstReaders, secondReaders] = exchange.readers as [
      ExecutionVertex[],
      ExecutionVertex[],
    ];
    for (const sink of firstReaders) await expectReceived(first, sink.attemptId, RECORDS / 2);
    for (const sink of secondReaders) await expectReceived(second, sink.attemptId, RECORDS / 2);
    for (const sink of firstReaders) await first.resume(sink.attemptId);
    for (const sink of secondReaders) await second.resume(sink.attemptId);
    const result = await exchange.execution.terminated;
    expect(result.error).toBeUndefined();
    expectReadInFull(result, 2, RECORDS, readerName(0));
    expectReadInFull(result, 2, RECORDS, readerName(1));
    await expectExitByThemselves(producer, first, second);
  }, 60_000);

  it("fails consumers with a PartitionNotFound-style error naming the partition when the worker that held it died after its producer finished", async () => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdSubmits = true;
    const exchange = await cluster().deploy(blocking(1, { consumers: 1 }), producer, consumer);
    const heldByProducerWorker = await finishedAndUnread(producer, consumer, exchange.producers);
    producer.kill();
    await producer.exited;
    consumer.releaseHeldSubmits();
    const result = await exchange.execution.terminated;
    if (!heldByProducerWorker) {
      // The plugin keeps blocking data outside its workers: it outlives the producer's worker.
      expect(result.status).toBe("FINISHED");
      expectReadInFull(result, 1, RECORDS, readerName(0));
    } else {
      expect(result.status).toBe("FAILED");
      expect(result.failedTask).toBe("Consumer (1/1)#0");
      const cause = only(exchange.consumers).failureCause;
      expect([ErrorCodes.PARTITION_NOT_FOUND, ErrorCodes.PARTITION_CONNECTION]).toContain(
        (cause as { code?: string } | undefined)?.code,
      );
      // The partition id names the producer's execution attempt.
      expect(cause?.message).toContain(only(exchange.producers).attemptId.toString());
      // Nothing is released on a worker that is gone.
      expect(result.releaseErrors).toEqual([]);
    }
    await expectExitByThemselves(consumer);
  }, 60_000);

  it("fails consumers with SLUICE_ERR_PARTITION_FILE_CORRUPTED naming the file when the partition's files were truncated", async (context) => {
    const { producer, consumer } = await cluster().startProducerAndConsumer();
    consumer.holdSubmits = true;
    const exchange = await cluster().deploy(blocking(1, { consumers: 1 }), producer, consumer);
    await finishedAndUnread(producer, consumer, exchange.producers);
    const damaged = await producer.truncatePartitionFiles();
    consumer.releaseHeldSubmits();
    if (damaged.length === 0) {
      await exchange.execution.terminated;
      context.skip("the plugin keeps no files on the producer's worker");
    }
    const result = await exchange.execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Consumer (1/1)#0");
    const cause = only(exchange.consumers).failureCause;
    expect(cause).toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
    expect(damaged.some((file) => cause?.message.includes(file))).toBe(true);
    await expectPartitionFilesDeleted(producer);
    await expectExitByThemselves(producer, consumer);
  }, 60_000);
}
