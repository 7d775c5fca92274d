/**
 * The unit-test harness of this package's environment and partitions: it creates writers and
 * gates through NetworkShuffleEnvironment's SPI methods (the unit under test) and drives them raw.
 * Applications, the conformance kit, the demo and the benchmarks deploy through the runtime's
 * TaskExecutor instead; this package cannot depend on the runtime. Not exported.
 */
import {
  ExecutionAttemptID,
  frameRecord,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  type NetworkBuffer,
  type RecordHolder,
  ResourceID,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type NetworkShuffleDescriptor,
  type PartitionProducerStateProvider,
  ResultPartitionType,
  readableConfigOf,
  type ShuffleEnvironmentContext,
} from "@sluice/runtime-api";
import type { SingleInputGate } from "../consumer/single-input-gate.js";
import type {
  NetworkResultPartition,
  NetworkShuffleEnvironment,
} from "../environment/network-shuffle-environment.js";
import { NetworkShuffleMaster } from "../environment/network-shuffle-master.js";

/** Raw config values shared by the tests (small pools so limits are reached quickly). */
export type RawConfig = Record<string, unknown>;

export function environmentContext(
  config: RawConfig,
  resourceId = new ResourceID(),
): ShuffleEnvironmentContext {
  return {
    configuration: readableConfigOf(config),
    taskExecutorResourceId: resourceId,
    networkMemorySize: 0,
    localCommunicationOnly: false,
    hostAddress: "127.0.0.1",
    numberOfSlots: 1,
    tmpDirPaths: [],
  };
}

export const RUNNING_PRODUCER: PartitionProducerStateProvider = {
  requestPartitionProducerState: async () => "RUNNING",
};

/** A job with `producers` partitions of `consumers` subpartitions each, all-to-all. */
export interface AllToAllJob {
  readonly writers: NetworkResultPartition[];
  readonly gates: SingleInputGate[];
  readonly descriptors: NetworkShuffleDescriptor[];
  /** What the consumers read: the data set and the producers' descriptors. */
  readonly resultId: IntermediateDataSetID;
  readonly type: ResultPartitionType;
}

/**
 * Deploys an all-to-all exchange through the real SPI path: the master registers each producer
 * partition, producers run in `producerEnv`, consumers in `consumerEnv` (the same environment for
 * local channels, another one for remote channels).
 */
export async function deployAllToAll(
  producerEnv: NetworkShuffleEnvironment,
  consumerEnv: NetworkShuffleEnvironment,
  producers: number,
  consumers: number,
  config: RawConfig,
  type = ResultPartitionType.PIPELINED_BOUNDED,
  options: { readonly advertisedPort?: number } = {},
): Promise<AllToAllJob> {
  const master = new NetworkShuffleMaster({
    configuration: readableConfigOf(config),
    onFatalError: (error) => {
      throw error;
    },
  });
  const jobId = new JobID();
  const resultId = new IntermediateDataSetID();
  const writers: NetworkResultPartition[] = [];
  const descriptors: NetworkShuffleDescriptor[] = [];
  for (let p = 0; p < producers; p++) {
    const partitionDescriptor = {
      resultId,
      totalNumberOfPartitions: producers,
      partitionId: new IntermediateResultPartitionID(resultId, p),
      partitionType: type,
      numberOfSubpartitions: consumers,
      connectionIndex: 0,
      isBroadcast: false,
      isAllToAllDistribution: true,
    };
    const attempt = new ExecutionAttemptID(undefined, undefined, p, 0);
    const shuffleDescriptor = await master.registerPartitionWithProducer(
      jobId,
      partitionDescriptor,
      {
        producerLocation: producerEnv.resourceId,
        producerExecutionId: attempt,
        address: "127.0.0.1",
        // Tests may advertise another port (a proxy in front of the data server).
        dataPort: options.advertisedPort ?? producerEnv.getDataPort(),
      },
    );
    descriptors.push(shuffleDescriptor);
    const ctx = producerEnv.createShuffleIOOwnerContext(`producer ${p}`, attempt);
    const [writer] = producerEnv.createResultPartitionWriters(ctx, [
      createResultPartitionDeploymentDescriptor(partitionDescriptor, shuffleDescriptor, 128),
    ]);
    writers.push(writer as NetworkResultPartition);
  }
  const gates = deployConsumers(consumerEnv, { resultId, type, descriptors }, consumers);
  return { writers, gates, descriptors, resultId, type };
}

/**
 * Deploys `consumers` gates (consumer c reads subpartition c of every producer) in `env`; for
 * blocking partitions, called again to read the same data a second time.
 */
export function deployConsumers(
  env: NetworkShuffleEnvironment,
  job: Pick<AllToAllJob, "resultId" | "type" | "descriptors">,
  consumers: number,
): SingleInputGate[] {
  const gates: SingleInputGate[] = [];
  for (let c = 0; c < consumers; c++) {
    const ctx = env.createShuffleIOOwnerContext(
      `consumer ${c}`,
      new ExecutionAttemptID(undefined, undefined, c, 0),
    );
    const [gate] = env.createInputGates(ctx, RUNNING_PRODUCER, [
      createInputGateDeploymentDescriptor(
        job.resultId,
        job.type,
        { start: c, end: c },
        job.descriptors,
      ),
    ]);
    gates.push(gate as SingleInputGate);
  }
  return gates;
}

/** A record of the tests: producer, channel, sequence number, then `padding` filler bytes. */
export function makeRecord(
  producer: number,
  channel: number,
  seq: number,
  padding: number,
): Buffer {
  const record = Buffer.alloc(12 + padding);
  record.writeInt32BE(producer, 0);
  record.writeInt32BE(channel, 4);
  record.writeInt32BE(seq, 8);
  for (let i = 0; i < padding; i++) record[12 + i] = (seq + i) & 0xff;
  return record;
}

/** Checks records of one gate arrive exactly once and in order per producer. */
export class RecordChecker {
  readonly nextSeq: number[];
  count = 0;
  private readonly deserializers: SpillingAdaptiveSpanningRecordDeserializer[];
  private readonly holder: RecordHolder<Uint8Array> = { value: undefined };

  constructor(
    readonly consumer: number,
    producers: number,
  ) {
    this.nextSeq = new Array<number>(producers).fill(0);
    this.deserializers = Array.from(
      { length: producers },
      () => new SpillingAdaptiveSpanningRecordDeserializer(),
    );
  }

  /** Feeds one buffer of channel `channel` (= producer index) and checks every complete record. */
  accept(channel: number, buffer: NetworkBuffer): void {
    const deserializer = this.deserializers[channel] as SpillingAdaptiveSpanningRecordDeserializer;
    deserializer.setNextBuffer(buffer);
    for (;;) {
      const result = deserializer.getNextRecordBytes(this.holder);
      if (result.isFullRecord()) {
        const bytes = Buffer.from(this.holder.value as Uint8Array);
        const producer = bytes.readInt32BE(0);
        const target = bytes.readInt32BE(4);
        const seq = bytes.readInt32BE(8);
        if (producer !== channel)
          throw new Error(`record of producer ${producer} on channel ${channel}`);
        if (target !== this.consumer)
          throw new Error(`record for ${target} reached consumer ${this.consumer}`);
        const expected = this.nextSeq[producer] as number;
        if (seq !== expected) {
          throw new Error(
            `consumer ${this.consumer}, producer ${producer}: expected seq ${expected}, got ${seq}`,
          );
        }
        for (let i = 12; i < bytes.length; i++) {
          if (bytes[i] !== ((seq + i - 12) & 0xff))
            throw new Error(`corrupt byte ${i} of seq ${seq}`);
        }
        this.nextSeq[producer] = expected + 1;
        this.count++;
      }
      if (result.isBufferConsumed()) return;
    }
  }

  hasUnfinishedData(): boolean {
    return this.deserializers.some((d) => d.hasUnfinishedData());
  }

  close(): void {
    for (const d of this.deserializers) d.clear();
  }
}

/** Options of {@link produce} and {@link consume}. */
export interface ExchangeOptions {
  /** Flush every this many records per channel (pipelined partitions). */
  readonly flushEvery?: number;
  /** Pause this long every 64 polls (a slow consumer). */
  readonly consumerDelayMs?: number;
}

/**
 * Producer `p` writes `recordsPerChannel` records to every subpartition round-robin, awaiting
 * availability only when back-pressured, then finishes. For a blocking partition it also waits
 * until the files are complete, and throws the partition's failure if it failed.
 */
export async function produce(
  writer: NetworkResultPartition,
  p: number,
  recordsPerChannel: number,
  padding: number,
  options: ExchangeOptions = {},
): Promise<void> {
  const consumers = writer.numberOfSubpartitions;
  for (let seq = 0; seq < recordsPerChannel; seq++) {
    for (let c = 0; c < consumers; c++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emitRecord(frameRecord(makeRecord(p, c, seq, padding)), c);
    }
    if (options.flushEvery !== undefined && seq % options.flushEvery === 0) writer.flushAll();
    if (seq % 512 === 0) await new Promise((r) => setImmediate(r));
  }
  if (!writer.isAvailable()) await writer.getAvailableFuture();
  writer.finish();
  if (!writer.isAvailable()) await writer.getAvailableFuture();
  const failure = writer.getFailureCause();
  if (failure !== undefined) throw failure;
}

/** Polls `gate` until it finished, feeding every buffer to `checker`. */
export async function consume(
  gate: SingleInputGate,
  checker: RecordChecker,
  options: ExchangeOptions = {},
): Promise<void> {
  let polled = 0;
  while (!gate.isFinished()) {
    const next = gate.pollNext();
    if (next === undefined) {
      await gate.getAvailableFuture();
      continue;
    }
    if (next.buffer !== undefined) checker.accept(next.channelIndex, next.buffer);
    if (++polled % 64 === 0) {
      await new Promise((r) =>
        options.consumerDelayMs ? setTimeout(r, options.consumerDelayMs) : setImmediate(r),
      );
    }
  }
}

/** Sets up `gates` and requests their partitions. */
export function requestPartitions(gates: readonly SingleInputGate[]): void {
  for (const gate of gates) {
    gate.setup();
    gate.requestPartitions();
  }
}

/** Sets up and requests `gates`, then consumes them all; one checker per gate. */
export async function consumeAll(
  gates: readonly SingleInputGate[],
  producers: number,
  options: ExchangeOptions = {},
): Promise<RecordChecker[]> {
  requestPartitions(gates);
  return consumeGates(gates, producers, options);
}

async function consumeGates(
  gates: readonly SingleInputGate[],
  producers: number,
  options: ExchangeOptions,
): Promise<RecordChecker[]> {
  const checkers = gates.map((_, c) => new RecordChecker(c, producers));
  await Promise.all(gates.map((gate, c) => consume(gate, checkers[c] as RecordChecker, options)));
  return checkers;
}

/**
 * Drives producers and consumers on the event loop until every record arrived: each producer
 * writes `recordsPerChannel` records to every subpartition round-robin, awaiting availability
 * only when back-pressured; consumers poll their gates and check order.
 */
export async function runAllToAll(
  job: AllToAllJob,
  recordsPerChannel: number,
  padding: number,
  options: ExchangeOptions = {},
): Promise<RecordChecker[]> {
  for (const writer of job.writers) writer.setup();
  requestPartitions(job.gates);
  const [checkers] = await Promise.all([
    consumeGates(job.gates, job.writers.length, options),
    ...job.writers.map((writer, p) => produce(writer, p, recordsPerChannel, padding, options)),
  ]);
  return checkers;
}
