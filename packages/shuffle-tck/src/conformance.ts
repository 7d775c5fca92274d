import {
  ExecutionAttemptID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  ResourceID,
} from "@sluice/core";
import { Configuration, ShuffleServiceLoader } from "@sluice/runtime";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  InputGateDeploymentDescriptorCodec,
  type PartitionDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  ResultPartitionType,
  type ShuffleDescriptor,
  type ShuffleMaster,
} from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ConsumeResult, ProduceResult } from "./messages.js";
import { WorkerClient } from "./worker-client.js";

/** What the suite needs to know about the plugin under test. */
export interface ShuffleConformanceOptions {
  /** A label for the describe block, e.g. "tcp". */
  readonly name: string;
  /** The `shuffle-service-factory.class` value, resolved by the loader in every process. */
  readonly factory: string;
  /** Folder bare specifiers resolve from (default: the current working directory). */
  readonly configDir?: string;
  /** Further configuration for every process (memory sizes, timeouts, TLS, …). */
  readonly configuration?: Readonly<Record<string, unknown>>;
  /** Records per producer in the exactly-once case (default 500 000, so 10^6 in all; env SLUICE_TCK_RECORDS overrides, e.g. 5 000 000 in `pnpm test:long`). */
  readonly records?: number;
}

/** Small pools, short timeouts: limits are reached quickly and failures show up fast. */
const SUITE_DEFAULTS: Readonly<Record<string, unknown>> = {
  "taskmanager.memory.network.min": "16mb",
  "taskmanager.memory.segment-size": "8kb",
  "execution.buffer-timeout.interval": "10ms",
  "taskmanager.network.partition-request-timeout": "10s",
  "taskmanager.network.request-backoff.max": "1s",
};

interface Worker {
  readonly client: WorkerClient;
  readonly resourceId: ResourceID;
  readonly port: number;
}

/**
 * Registers the conformance suite for one shuffle plugin with vitest. Every case runs the SPI
 * end to end through public interfaces only: the plugin's ShuffleMaster in the test process
 * registers partitions, descriptors travel as JSON to worker processes, each with its own
 * ShuffleEnvironment, which create writers and gates.
 */
export function describeShuffleServiceConformance(options: ShuffleConformanceOptions): void {
  const config: Record<string, unknown> = {
    ...SUITE_DEFAULTS,
    ...options.configuration,
    "shuffle-service-factory.class": options.factory,
  };
  const records = Number(process.env.SLUICE_TCK_RECORDS ?? 0) || options.records || 500_000;

  describe(`shuffle service conformance: ${options.name}`, () => {
    let master: ShuffleMaster;
    const workers: WorkerClient[] = [];

    beforeAll(async () => {
      const configuration = new Configuration(
        config,
        options.configDir === undefined ? {} : { configDir: options.configDir },
      );
      const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(configuration);
      master = factory.createShuffleMaster({
        configuration,
        onFatalError: (error) => {
          throw error;
        },
      });
      await master.start();
    });

    afterAll(async () => {
      await master?.close();
    });

    afterEach(() => {
      for (const worker of workers.splice(0)) worker.kill();
    });

    async function startWorker(
      label: string,
      extra: Record<string, unknown> = {},
    ): Promise<Worker> {
      const client = new WorkerClient(`${options.name}-${label}`);
      workers.push(client);
      const init = await client.request<{ port: number; resourceId: string }>({
        cmd: "init",
        config: { ...config, ...extra },
        ...(options.configDir === undefined ? {} : { configDir: options.configDir }),
      });
      return { client, port: init.port, resourceId: ResourceID.fromHex(init.resourceId) };
    }

    /** Pipelined partitions are released once consumed, failed or cancelled. */
    async function expectPartitionsReleased(worker: Worker): Promise<void> {
      await expect
        .poll(() =>
          worker.client.request<{ partitionsOccupyingLocalResources: number }>({ cmd: "status" }),
        )
        .toEqual({ partitionsOccupyingLocalResources: 0 });
    }

    /** The writer reports unavailable: the producer is blocked on backpressure. */
    async function expectBlocked(worker: Worker, writer: string): Promise<void> {
      await expect
        .poll(async () => {
          const status = await worker.client.request<{ available: boolean }>({
            cmd: "producerStatus",
            writer,
          });
          return status.available;
        })
        .toBe(false);
    }

    /** The gate's first channel received at least `records` records (so it is connected). */
    async function expectReceived(worker: Worker, gate: string, records: number): Promise<void> {
      await expect
        .poll(async () => {
          const status = await worker.client.request<{ counts: number[] }>({
            cmd: "consumerStatus",
            gate,
          });
          return status.counts[0] ?? 0;
        })
        .toBeGreaterThanOrEqual(records);
    }

    /** Closes each worker's environment; each process must then exit on its own (no leaked handles). */
    async function expectExitByThemselves(...targets: Worker[]): Promise<void> {
      for (const worker of targets) {
        expect(await worker.client.close()).toEqual({ code: 0, exitedByItself: true });
      }
    }

    /** Registers one pipelined partition of `producer` and returns both deployment forms. */
    async function registerPartition(
      producer: Worker,
      resultId: IntermediateDataSetID,
      partitionNum: number,
      totalPartitions: number,
      subpartitions: number,
    ): Promise<{ attempt: ExecutionAttemptID; descriptor: ShuffleDescriptor; rpdd: unknown }> {
      const partitionDescriptor: PartitionDescriptor = {
        resultId,
        totalNumberOfPartitions: totalPartitions,
        partitionId: new IntermediateResultPartitionID(resultId, partitionNum),
        partitionType: ResultPartitionType.PIPELINED_BOUNDED,
        numberOfSubpartitions: subpartitions,
        connectionIndex: 0,
        isBroadcast: false,
        isAllToAllDistribution: true,
      };
      const attempt = new ExecutionAttemptID(undefined, undefined, partitionNum, 0);
      const descriptor = await master.registerPartitionWithProducer(
        new JobID(),
        partitionDescriptor,
        {
          producerLocation: producer.resourceId,
          producerExecutionId: attempt,
          address: "127.0.0.1",
          dataPort: producer.port,
        },
      );
      const rpdd = ResultPartitionDeploymentDescriptorCodec.toJSON(
        createResultPartitionDeploymentDescriptor(partitionDescriptor, descriptor, 128),
      );
      return { attempt, descriptor, rpdd };
    }

    function gateDescriptor(
      resultId: IntermediateDataSetID,
      subpartition: number,
      producers: ShuffleDescriptor[],
    ) {
      return InputGateDeploymentDescriptorCodec.toJSON(
        createInputGateDeploymentDescriptor(
          resultId,
          ResultPartitionType.PIPELINED_BOUNDED,
          { start: subpartition, end: subpartition },
          producers,
        ),
      );
    }

    async function createWriter(
      worker: Worker,
      owner: string,
      attempt: ExecutionAttemptID,
      rpdd: unknown,
      delayMs?: number,
    ) {
      const { writers } = await worker.client.request<{ writers: string[] }>({
        cmd: "createWriters",
        owner,
        attempt: attempt.toString(),
        descriptors: [rpdd],
        ...(delayMs === undefined ? {} : { delayMs }),
      });
      return writers[0] as string;
    }

    async function createGate(worker: Worker, owner: string, igdd: unknown) {
      const { gates } = await worker.client.request<{ gates: string[] }>({
        cmd: "createGates",
        owner,
        attempt: new ExecutionAttemptID().toString(),
        descriptors: [igdd],
      });
      return gates[0] as string;
    }

    it("delivers keyed records exactly once and in order per channel between two processes", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const parts = [];
      const writers = [];
      for (let p = 0; p < 2; p++) {
        const part = await registerPartition(producer, resultId, p, 2, 4);
        parts.push(part);
        writers.push(await createWriter(producer, `source-${p}`, part.attempt, part.rpdd));
      }
      const gates = [];
      for (let c = 0; c < 4; c++) {
        gates.push(
          await createGate(
            consumer,
            `sink-${c}`,
            gateDescriptor(
              resultId,
              c,
              parts.map((p) => p.descriptor),
            ),
          ),
        );
      }
      const consumed = gates.map((gate) =>
        consumer.client.request<ConsumeResult>({ cmd: "consume", gate, options: {} }),
      );
      const produced = await Promise.all(
        writers.map((writer) =>
          producer.client.request<ProduceResult>({
            cmd: "produce",
            writer,
            plan: { records, padding: 20, keyed: true },
          }),
        ),
      );
      const results = await Promise.all(consumed);
      for (const result of results) {
        expect(result.error).toBeUndefined();
        expect(result.violations).toEqual([]);
        expect(result.finished).toBe(true);
      }
      // Every record arrived exactly once: per producer (= channel), counts add up.
      for (let p = 0; p < 2; p++) {
        const received = results.reduce((sum, r) => sum + (r.counts[p] ?? 0), 0);
        expect(received).toBe(records);
        expect(produced[p]?.emitted).toBe(records);
      }
      // Pipelined partitions are released once consumed.
      await expectPartitionsReleased(producer);
      await expectExitByThemselves(producer, consumer);
    }, 120_000);

    it("stops a producer at its bound under a stalled consumer while other channels on the same connection keep flowing", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const stalledResult = new IntermediateDataSetID();
      const flowingResult = new IntermediateDataSetID();
      const stalled = await registerPartition(producer, stalledResult, 0, 1, 1);
      const flowing = await registerPartition(producer, flowingResult, 0, 1, 1);
      const stalledWriter = await createWriter(
        producer,
        "stalled-source",
        stalled.attempt,
        stalled.rpdd,
      );
      const flowingWriter = await createWriter(
        producer,
        "flowing-source",
        flowing.attempt,
        flowing.rpdd,
      );
      const stalledGate = await createGate(
        consumer,
        "stalled-sink",
        gateDescriptor(stalledResult, 0, [stalled.descriptor]),
      );
      const flowingGate = await createGate(
        consumer,
        "flowing-sink",
        gateDescriptor(flowingResult, 0, [flowing.descriptor]),
      );
      const stalledConsume = consumer.client.request<ConsumeResult>({
        cmd: "consume",
        gate: stalledGate,
        options: { stalled: true },
      });
      const total = 200_000;
      const stalledProduce = producer.client.request<ProduceResult>({
        cmd: "produce",
        writer: stalledWriter,
        plan: { records: total, padding: 88 },
      });
      // The flowing pair shares the producer's connection and must complete regardless.
      const [flowingConsumed, flowingProduced] = await Promise.all([
        consumer.client.request<ConsumeResult>({ cmd: "consume", gate: flowingGate, options: {} }),
        producer.client.request<ProduceResult>({
          cmd: "produce",
          writer: flowingWriter,
          plan: { records: 50_000, padding: 88 },
        }),
      ]);
      expect(flowingConsumed.violations).toEqual([]);
      expect(flowingConsumed.counts).toEqual([flowingProduced.emitted]);
      // The stalled producer is blocked: unavailable, having emitted a bounded number of records.
      await expectBlocked(producer, stalledWriter);
      const blocked = await producer.client.request<{ emitted: number }>({
        cmd: "producerStatus",
        writer: stalledWriter,
      });
      await new Promise((r) => setTimeout(r, 300));
      const stillBlocked = await producer.client.request<{ emitted: number; available: boolean }>({
        cmd: "producerStatus",
        writer: stalledWriter,
      });
      expect(stillBlocked.emitted).toBe(blocked.emitted); // no progress while stalled
      expect(blocked.emitted).toBeLessThan(total); // stopped at its bound, not after everything
      // Bound: what fits into 16 MiB of network memory on each side, in 100-byte records.
      expect(blocked.emitted).toBeLessThan((2 * 16 * 1024 * 1024) / 100);
      await consumer.client.request({ cmd: "unstall", gate: stalledGate });
      const [stalledConsumed, stalledProduced] = await Promise.all([
        stalledConsume,
        stalledProduce,
      ]);
      expect(stalledProduced.backPressured).toBe(true);
      expect(stalledConsumed.violations).toEqual([]);
      expect(stalledConsumed.counts).toEqual([total]);
      await expectExitByThemselves(producer, consumer);
    }, 120_000);

    it("fails the consumer's gate with the producer's error when the producer fails", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 1);
      const writer = await createWriter(producer, "failing-source", part.attempt, part.rpdd);
      const gate = await createGate(
        consumer,
        "sink",
        gateDescriptor(resultId, 0, [part.descriptor]),
      );
      const consumed = consumer.client.request<ConsumeResult>({
        cmd: "consume",
        gate,
        options: {},
      });
      await producer.client.request<ProduceResult>({
        cmd: "produce",
        writer,
        plan: {
          records: 50_000,
          padding: 20,
          failAfter: 20_000,
          failMessage: "boom from the producer",
          flushEvery: 100,
        },
      });
      const result = await consumed;
      expect(result.finished).toBe(false);
      expect(result.error?.message).toContain("boom from the producer");
      expect(result.violations).toEqual([]);
      await expectExitByThemselves(producer, consumer);
    }, 60_000);

    it("releases the producer's partition when the consumer cancels", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 1);
      const writer = await createWriter(producer, "source", part.attempt, part.rpdd);
      const gate = await createGate(
        consumer,
        "cancelling-sink",
        gateDescriptor(resultId, 0, [part.descriptor]),
      );
      const consumed = consumer.client.request<ConsumeResult>({
        cmd: "consume",
        gate,
        options: { cancelAfter: 10_000 },
      });
      const produced = producer.client.request<ProduceResult>({
        cmd: "produce",
        writer,
        plan: { records: 10_000_000, padding: 20 },
      });
      const result = await consumed;
      expect(result.finished).toBe(false);
      const outcome = await produced;
      expect(outcome.releasedError).toBeDefined();
      expect(outcome.emitted).toBeLessThan(10_000_000);
      await expectPartitionsReleased(producer);
      await expectExitByThemselves(producer, consumer);
    }, 60_000);

    it("finds a partition that registers after the consumer asked for it", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 2);
      const gates = [
        await createGate(consumer, "early-sink-0", gateDescriptor(resultId, 0, [part.descriptor])),
        await createGate(consumer, "early-sink-1", gateDescriptor(resultId, 1, [part.descriptor])),
      ];
      const consumed = gates.map((gate) =>
        consumer.client.request<ConsumeResult>({ cmd: "consume", gate, options: {} }),
      );
      const writer = await createWriter(producer, "late-source", part.attempt, part.rpdd, 500);
      await producer.client.request<ProduceResult>({
        cmd: "produce",
        writer,
        plan: { records: 5_000, padding: 8 },
      });
      for (const result of await Promise.all(consumed)) {
        expect(result.error).toBeUndefined();
        expect(result.counts).toEqual([5_000]);
      }
      await expectExitByThemselves(producer, consumer);
    }, 60_000);

    it("fails every consumer channel with an error naming the remote when the producer process is killed", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 2);
      const writer = await createWriter(producer, "doomed-source", part.attempt, part.rpdd);
      const gates = [
        await createGate(consumer, "sink-0", gateDescriptor(resultId, 0, [part.descriptor])),
        await createGate(consumer, "sink-1", gateDescriptor(resultId, 1, [part.descriptor])),
      ];
      const consumed = gates.map((gate) =>
        consumer.client.request<ConsumeResult>({ cmd: "consume", gate, options: {} }),
      );
      void producer.client
        .request({
          cmd: "produce",
          writer,
          plan: { records: 100_000_000, padding: 20, flushEvery: 64 },
        })
        .catch(() => {});
      await expectReceived(consumer, gates[0] as string, 1_001);
      const killedAt = Date.now();
      producer.client.kill();
      for (const result of await Promise.all(consumed)) {
        expect(result.finished).toBe(false);
        expect(result.error).toBeDefined();
        expect(result.error?.message).toContain(`${producer.port}`);
        expect(result.violations).toEqual([]);
      }
      expect(Date.now() - killedAt).toBeLessThan(10_000);
      await expectExitByThemselves(consumer);
    }, 60_000);

    it("releases what a killed consumer held at the producer and keeps serving the other consumers", async () => {
      const producer = await startWorker("producer");
      const doomed = await startWorker("doomed-consumer");
      const healthy = await startWorker("healthy-consumer");
      const doomedResult = new IntermediateDataSetID();
      const healthyResult = new IntermediateDataSetID();
      const doomedPart = await registerPartition(producer, doomedResult, 0, 1, 1);
      const healthyPart = await registerPartition(producer, healthyResult, 0, 1, 1);
      const doomedWriter = await createWriter(
        producer,
        "to-doomed",
        doomedPart.attempt,
        doomedPart.rpdd,
      );
      const healthyWriter = await createWriter(
        producer,
        "to-healthy",
        healthyPart.attempt,
        healthyPart.rpdd,
      );
      const doomedGate = await createGate(
        doomed,
        "sink",
        gateDescriptor(doomedResult, 0, [doomedPart.descriptor]),
      );
      const healthyGate = await createGate(
        healthy,
        "sink",
        gateDescriptor(healthyResult, 0, [healthyPart.descriptor]),
      );
      // The doomed consumer reads a little (so it is surely connected), then stops reading.
      void doomed.client
        .request({ cmd: "consume", gate: doomedGate, options: { stallAfter: 10 } })
        .catch(() => {});
      const toDoomed = producer.client.request<ProduceResult>({
        cmd: "produce",
        writer: doomedWriter,
        plan: { records: 10_000_000, padding: 88 },
      });
      await expectReceived(doomed, doomedGate, 10);
      // The producer fills what the stalled consumer allows, then blocks.
      await expectBlocked(producer, doomedWriter);
      doomed.client.kill();
      const outcome = await toDoomed;
      expect(outcome.releasedError).toBeDefined();
      const [consumed, produced] = await Promise.all([
        healthy.client.request<ConsumeResult>({ cmd: "consume", gate: healthyGate, options: {} }),
        producer.client.request<ProduceResult>({
          cmd: "produce",
          writer: healthyWriter,
          plan: { records: 20_000, padding: 88 },
        }),
      ]);
      expect(consumed.violations).toEqual([]);
      expect(consumed.counts).toEqual([produced.emitted]);
      await expectPartitionsReleased(producer);
      await expectExitByThemselves(producer, healthy);
    }, 60_000);

    it("cancels a producer that is blocked on backpressure without hanging, and the consumer learns of it", async () => {
      const producer = await startWorker("producer");
      const consumer = await startWorker("consumer");
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 1);
      const writer = await createWriter(producer, "blocked-source", part.attempt, part.rpdd);
      const gate = await createGate(
        consumer,
        "stalled-sink",
        gateDescriptor(resultId, 0, [part.descriptor]),
      );
      // The consumer reads a little (so it is surely connected), then stops reading.
      const consumed = consumer.client.request<ConsumeResult>({
        cmd: "consume",
        gate,
        options: { stallAfter: 10 },
      });
      const produced = producer.client.request<ProduceResult>({
        cmd: "produce",
        writer,
        plan: { records: 10_000_000, padding: 88 },
      });
      await expectReceived(consumer, gate, 10);
      await expectBlocked(producer, writer);
      const cancelledAt = Date.now();
      await producer.client.request({ cmd: "cancelProducer", writer });
      const outcome = await produced;
      expect(outcome.releasedError?.code).toBe("SLUICE_ERR_CANCELLED");
      expect(Date.now() - cancelledAt).toBeLessThan(5_000);
      await consumer.client.request({ cmd: "unstall", gate });
      const result = await consumed;
      expect(result.finished).toBe(false);
      expect(result.error?.message, JSON.stringify(result.error)).toContain("cancelled");
      await expectPartitionsReleased(producer);
      await expectExitByThemselves(producer, consumer);
    }, 60_000);

    it("fails with PartitionNotFound when the partition never registers", async () => {
      // Short timeouts: the consumer retries while the producer "runs", then gives up.
      const quick = {
        "taskmanager.network.partition-request-timeout": "1s",
        "taskmanager.network.request-backoff.max": "200ms",
      };
      const producer = await startWorker("producer", quick);
      const consumer = await startWorker("consumer", quick);
      const resultId = new IntermediateDataSetID();
      const part = await registerPartition(producer, resultId, 0, 1, 1);
      const gate = await createGate(
        consumer,
        "waiting-sink",
        gateDescriptor(resultId, 0, [part.descriptor]),
      );
      const started = Date.now();
      const result = await consumer.client.request<ConsumeResult>({
        cmd: "consume",
        gate,
        options: {},
      });
      expect(result.error?.code).toBe("SLUICE_ERR_PARTITION_NOT_FOUND");
      expect(result.error?.message).toContain(part.descriptor.resultPartitionId.toString());
      expect(Date.now() - started).toBeLessThan(15_000);
      await expectExitByThemselves(producer, consumer);
    }, 60_000);
  });
}
