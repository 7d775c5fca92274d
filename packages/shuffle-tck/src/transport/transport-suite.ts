import { EndOfData, ErrorCodes, StopMode, TaskEvent } from "@sluice/core";
import type { JobResult } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { expectReadInFull } from "../kit-results.js";
import type { ConsumeOptions } from "../tck-tasks.js";
import {
  gatewayOf,
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "./in-process-cluster.js";

/** A named configuration the exchange case also runs with (e.g. a transport's own options). */
export interface TransportVariant {
  readonly name: string;
  readonly configuration?: RawConfig;
  readonly consume?: ConsumeOptions;
}

/** What {@link describeTransportSuite} needs to know about the plugin. */
export interface TransportSuiteOptions {
  /** A label, e.g. "TCP". */
  readonly name: string;
  /** The plugin's `shuffle-service-factory.class` value. */
  readonly factory: string;
  /** Extra cases of the exactly-once exchange, each with its own configuration. */
  readonly variants?: readonly TransportVariant[];
}

const BASE: RawConfig = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.network.max": "8mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "5ms",
  "taskmanager.network.partition-request-timeout": "2s",
};

/** The job finished, and its consumers got each producer's `records` intact, once, in order. */
function expectDeliveredExactlyOnce(result: JobResult, producers: number, records: number): void {
  expect(result.error).toBeUndefined();
  expectReadInFull(result, producers, records);
}

/**
 * The behaviour of a network-shuffle plugin between two TaskExecutors in one process: records
 * cross its transport exactly once and in order, every buffer comes home, and task events travel
 * upstream. One suite for every transport, so the plugins' tests are not copies of each other.
 */
export function describeTransportSuite(options: TransportSuiteOptions): void {
  describe(`the ${options.name} shuffle between two TaskExecutors`, () => {
    let cluster: InProcessCluster | undefined;

    afterEach(async () => {
      await cluster?.close();
      cluster = undefined;
    });

    const variants: TransportVariant[] = [{ name: "the defaults" }, ...(options.variants ?? [])];
    for (const variant of variants) {
      it(`delivers every record exactly once and in order over remote channels, with ${variant.name}, then every buffer is back`, async () => {
        cluster = new InProcessCluster(options.factory, { ...BASE, ...variant.configuration });
        const producer = await cluster.startExecutor();
        const consumer = await cluster.startExecutor();
        const records = 20_000;
        const { execution } = await cluster.deploy(
          {
            producers: 2,
            consumers: 4,
            plan: { records, padding: 40 },
            ...(variant.consume === undefined ? {} : { consume: variant.consume }),
          },
          producer,
          consumer,
        );
        expectDeliveredExactlyOnce(await execution.terminated, 2, records);
        // All channels of the consumer share one connection to the producer.
        expect(networkEnvironmentOf(consumer).getNumberOfClientConnections()).toBeLessThanOrEqual(
          1,
        );
      });
    }

    it("delivers every record exactly once and in order across the int32 wrap-around of sequence numbers", async () => {
      // Every view starts at 2^31 - 1, so each channel's second buffer is numbered -2^31 on
      // both sides (a channel carries at least its data and EndOfPartition); without the wrap
      // the producer could not encode it and the consumer would see a gap.
      cluster = new InProcessCluster(options.factory, {
        ...BASE,
        "taskmanager.network.initial-sequence-number": 2 ** 31 - 1,
      });
      const producer = await cluster.startExecutor();
      const consumer = await cluster.startExecutor();
      const records = 5_000;
      const { execution } = await cluster.deploy(
        { producers: 2, consumers: 2, plan: { records, padding: 40 } },
        producer,
        consumer,
      );
      expectDeliveredExactlyOnce(await execution.terminated, 2, records);
    });

    it("fails a remote consumer whose partition never registers with PartitionNotFound naming it, within 2 × request-backoff.max", async () => {
      // Each request waits 1 s at the producer's server; the budget is 2 × 1 s, so the consumer
      // asks twice, at once after the first answer, and fails after about 2 s. Retrying with the
      // doubling local-channel backoff instead (10 ms … 1 s) would make 9 requests: over 11 s.
      cluster = new InProcessCluster(options.factory, {
        ...BASE,
        "taskmanager.network.partition-request-timeout": "1s",
        "taskmanager.network.request-backoff.initial": "10ms",
        "taskmanager.network.request-backoff.max": "1s",
      });
      const producer = await cluster.startExecutor();
      const consumer = await cluster.startExecutor();
      const started = performance.now();
      // The job side counts the producer deployed (it stays DEPLOYING): its partition never
      // registers, while its data server answers.
      const { producers, consumers, execution } = await cluster.deploy(
        { producers: 1, consumers: 1, plan: { records: 1, padding: 0 } },
        gatewayOf(producer, { neverDeploy: true }),
        consumer,
      );
      const sink = consumers[0];
      await expect.poll(() => sink?.state, { timeout: 30_000 }).toBe("FAILED");
      const elapsed = performance.now() - started;
      const cause = sink?.failureCause;
      expect(cause).toMatchObject({
        code: ErrorCodes.PARTITION_NOT_FOUND,
        name: "PartitionNotFoundError",
      });
      // The partition's id names its producer attempt.
      expect(cause?.message).toContain(producers[0]?.attemptId.toString());
      expect(cause?.message).toMatch(/not found after 2 partition request\(s\)/);
      // Two waits of the server happened; well below the 11 s of the old schedule.
      expect(elapsed).toBeGreaterThanOrEqual(1_900);
      expect(elapsed).toBeLessThan(6_000);
      await execution.terminated;
    });

    it("delivers a consumer's task event to the producer's subscribers, and fails the channel when nobody listens", async () => {
      cluster = new InProcessCluster(options.factory, BASE);
      const producerExecutor = await cluster.startExecutor();
      const consumerExecutor = await cluster.startExecutor();
      const { producers, consumers } = await cluster.deployWithoutRunning(
        { producers: 1, consumers: 2, plan: { records: 0, padding: 0 } },
        producerExecutor,
        consumerExecutor,
      );
      const partition = producers[0]?.partitions[0];
      const [gate0, gate1] = consumers.map((task) => task.gates[0]);
      if (partition === undefined || gate0 === undefined || gate1 === undefined) {
        throw new Error("the exchange has no partition or gates");
      }
      const received: string[] = [];
      const unsubscribe = networkEnvironmentOf(producerExecutor).taskEventDispatcher.subscribe(
        partition.partitionId,
        (event) => received.push(`${event.typeName}:${Buffer.from(event.payload).toString()}`),
      );
      const sendWhenConnected = (gate: typeof gate0, payload: string) =>
        // The channel needs its connection before it can send upstream.
        expect
          .poll(() => {
            try {
              gate.sendTaskEvent(new TaskEvent("superstep", Buffer.from(payload)));
              return true;
            } catch {
              return false;
            }
          })
          .toBe(true);
      await sendWhenConnected(gate0, "7");
      await expect.poll(() => received).toEqual(["superstep:7"]);
      unsubscribe();
      await sendWhenConnected(gate1, "8");
      await expect
        .poll(() => {
          try {
            gate1.pollNext();
            return undefined;
          } catch (error) {
            return (error as Error).message;
          }
        })
        .toMatch(/no task event listener/);
      expect(received).toEqual(["superstep:7"]);
    });

    it("resolves a producer's all-data-processed future only once every remote consumer acknowledged the EndOfData it read", async () => {
      cluster = new InProcessCluster(options.factory, BASE);
      const producerExecutor = await cluster.startExecutor();
      const consumerExecutor = await cluster.startExecutor();
      const { producers, consumers } = await cluster.deployWithoutRunning(
        { producers: 1, consumers: 2, plan: { records: 0, padding: 0 } },
        producerExecutor,
        consumerExecutor,
      );
      const partition = producers[0]?.partitions[0];
      const [gate0, gate1] = consumers.map((task) => task.gates[0]);
      if (partition === undefined || gate0 === undefined || gate1 === undefined) {
        throw new Error("the exchange has no partition or gates");
      }
      let processed = false;
      void partition.getAllDataProcessedFuture?.().then(() => {
        processed = true;
      });
      partition.broadcastEvent(new EndOfData(StopMode.DRAIN));
      partition.flushAll();
      const readEndOfData = (gate: typeof gate0) =>
        expect.poll(() => gate.pollNext()?.event?.kind, { timeout: 10_000 }).toBe("EndOfData");
      await readEndOfData(gate0);
      gate0.acknowledgeAllRecordsProcessed?.(0);
      // A task event behind the acknowledgement on the same connection: once it arrived, the
      // acknowledgement did too, and one of two consumers is not enough.
      const received: string[] = [];
      const unsubscribe = networkEnvironmentOf(producerExecutor).taskEventDispatcher.subscribe(
        partition.partitionId,
        (event) => received.push(event.typeName),
      );
      gate0.sendTaskEvent(new TaskEvent("after-ack", Buffer.from("")));
      await expect.poll(() => received).toEqual(["after-ack"]);
      unsubscribe();
      expect(processed).toBe(false);
      await readEndOfData(gate1);
      gate1.acknowledgeAllRecordsProcessed?.(0);
      await expect.poll(() => processed, { timeout: 10_000 }).toBe(true);
    });
  });
}
