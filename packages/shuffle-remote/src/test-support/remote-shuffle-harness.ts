import { mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  ExecutionAttemptID,
  frameRecord,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  ResourceID,
  type ResultPartitionID,
} from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type JobShuffleContext,
  type PartitionDescriptor,
  type ReadableConfig,
  ResultPartitionType,
  type ResultPartitionTypeInfo,
  readableConfigOf,
  type ShuffleDescriptor,
} from "@sluice/runtime-api";
import type { RemoteShuffleDescriptor } from "../remote-shuffle-descriptor.js";
import { RemoteShuffleEnvironment } from "../remote-shuffle-environment.js";
import { RemoteShuffleMaster } from "../remote-shuffle-master.js";
import { ShuffleWorker } from "../shuffle-worker.js";

/** Small memory, fast heartbeats: what the tests of this package run with. */
export const TEST_SETTINGS: Readonly<Record<string, unknown>> = {
  "remote-shuffle.manager.rpc-port": 0,
  "remote-shuffle.worker.memory.writing-size": "8mb",
  "remote-shuffle.worker.memory.reading-size": "4mb",
  "remote-shuffle.worker.heartbeat-interval": "100ms",
  "taskmanager.network.sort-shuffle.min-buffers": 32,
  "taskmanager.memory.segment-size": "8kb",
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.network.max": "4mb",
  "taskmanager.network.partition-request-timeout": "5s",
  "taskmanager.network.request-backoff.max": "500ms",
};

/** A master, and workers and task-manager environments that clean up after themselves. */
export class RemoteShuffleHarness {
  readonly jobId = new JobID();
  readonly lost: ResultPartitionID[][] = [];
  private readonly closers: (() => Promise<void> | void)[] = [];

  private constructor(
    readonly settings: Readonly<Record<string, unknown>>,
    readonly master: RemoteShuffleMaster,
  ) {}

  static async start(
    settings: Readonly<Record<string, unknown>> = {},
  ): Promise<RemoteShuffleHarness> {
    const all = { ...TEST_SETTINGS, ...settings };
    const master = new RemoteShuffleMaster({
      configuration: readableConfigOf(all),
      onFatalError: (error) => {
        throw error;
      },
    });
    await master.start();
    const harness = new RemoteShuffleHarness(all, master);
    harness.closers.push(() => master.close());
    const context: JobShuffleContext = {
      jobId: harness.jobId,
      stopTrackingAndReleasePartitions: async (ids) => {
        harness.lost.push([...ids]);
      },
    };
    master.registerJob(context);
    return harness;
  }

  /** The configuration of a worker or task manager registering with this harness's master. */
  config(more: Readonly<Record<string, unknown>> = {}): ReadableConfig {
    return readableConfigOf({
      ...this.settings,
      "remote-shuffle.manager.rpc-port": this.master.managerPort,
      ...more,
    });
  }

  /** Starts a worker in this process (real sockets, its own folder) and waits for its registration. */
  async startWorker(more: Readonly<Record<string, unknown>> = {}): Promise<ShuffleWorker> {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-remote-test-"));
    const worker = await ShuffleWorker.start(this.config({ "io.tmp.dirs": dir, ...more }));
    this.closers.push(async () => {
      await worker.close();
      rmSync(dir, { recursive: true, force: true });
    });
    await waitFor(
      () =>
        this.master.liveWorkers().some((live) => live.incarnation === worker.address.incarnation),
      "the worker's registration",
    );
    return worker;
  }

  /** A task manager's shuffle environment, started (with `more` settings of its own). */
  async startEnvironment(
    more: Readonly<Record<string, unknown>> = {},
  ): Promise<RemoteShuffleEnvironment> {
    const environment = new RemoteShuffleEnvironment({
      configuration: this.config(more),
      taskExecutorResourceId: new ResourceID(),
      networkMemorySize: 4 * 1024 * 1024,
      localCommunicationOnly: false,
      hostAddress: "127.0.0.1",
      numberOfSlots: 1,
      tmpDirPaths: [tmpdir()],
    });
    await environment.start();
    this.closers.push(() => environment.close());
    return environment;
  }

  async close(): Promise<void> {
    for (const close of this.closers.reverse()) await close();
  }
}

/** A partition of `subpartitions` subpartitions of a fresh data set. */
export function partitionDescriptor(
  subpartitions: number,
  partitionType: ResultPartitionTypeInfo = ResultPartitionType.BLOCKING,
): PartitionDescriptor {
  const resultId = new IntermediateDataSetID();
  return {
    resultId,
    totalNumberOfPartitions: 1,
    partitionId: new IntermediateResultPartitionID(resultId, 0),
    partitionType,
    numberOfSubpartitions: subpartitions,
    connectionIndex: 0,
    isBroadcast: false,
    isAllToAllDistribution: true,
  };
}

/**
 * Registers a partition with the master, as the job side does before deploying its producer (a
 * new producer attempt, unless `producerId` names one).
 */
export function register(
  harness: RemoteShuffleHarness,
  partition: PartitionDescriptor,
  producerId: ExecutionAttemptID = new ExecutionAttemptID(),
): Promise<RemoteShuffleDescriptor> {
  return harness.master.registerPartitionWithProducer(harness.jobId, partition, {
    producerLocation: new ResourceID(),
    producerExecutionId: producerId,
    address: "127.0.0.1",
    dataPort: 1,
  });
}

/** Records `0..count` of subpartition `s`: `padding` bytes of 0xAA after a 4-byte index. */
export function recordsOf(subpartition: number, count: number, padding = 60): Buffer[] {
  return Array.from({ length: count }, (_, i) => {
    const payload = Buffer.alloc(4 + padding, 0xaa);
    payload.writeUInt32BE(subpartition * 1_000_000 + i, 0);
    return frameRecord(payload);
  });
}

/**
 * Writes `records[s]` to subpartition `s` through a writer of `environment`, then finishes.
 * `midway` runs once half of the records were written (a producer that stalls there).
 */
export async function writePartition(
  environment: RemoteShuffleEnvironment,
  partition: PartitionDescriptor,
  descriptor: ShuffleDescriptor,
  records: readonly (readonly Buffer[])[],
  midway?: () => Promise<void>,
): Promise<void> {
  const owner = environment.createShuffleIOOwnerContext(
    "Producer (1/1)#0",
    new ExecutionAttemptID(),
  );
  const [writer] = environment.createResultPartitionWriters(owner, [
    createResultPartitionDeploymentDescriptor(partition, descriptor, 128),
  ]);
  if (writer === undefined) throw new Error("no writer");
  writer.setup();
  const longest = Math.max(...records.map((r) => r.length));
  for (let i = 0; i < longest; i++) {
    if (i === Math.floor(longest / 2)) await midway?.();
    for (let s = 0; s < records.length; s++) {
      const record = records[s]?.[i];
      if (record === undefined) continue;
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      const failure = writer.getFailureCause();
      if (failure !== undefined) throw failure;
      writer.emitRecord(record, s);
    }
  }
  writer.finish();
  while (!writer.isAvailable()) await writer.getAvailableFuture();
  const failure = writer.getFailureCause();
  writer.close();
  if (failure !== undefined) throw failure;
}

/** What {@link readPartition} does besides reading. */
export interface ReadOptions {
  /** Runs once the first buffer arrived, before the gate is polled again. */
  readonly afterFirstBuffer?: () => Promise<void>;
  /** Receives each subpartition's bytes as they are delivered (also when the read fails). */
  readonly delivered?: Buffer[][];
}

/** Reads subpartitions `[0, subpartitions)` of the partition; resolves with each one's bytes. */
export async function readPartition(
  environment: RemoteShuffleEnvironment,
  partition: PartitionDescriptor,
  descriptor: ShuffleDescriptor,
  subpartitions: number,
  options: ReadOptions = {},
): Promise<Buffer[]> {
  const owner = environment.createShuffleIOOwnerContext(
    "Consumer (1/1)#0",
    new ExecutionAttemptID(),
  );
  const [gate] = environment.createInputGates(
    owner,
    { requestPartitionProducerState: async () => "FINISHED" },
    [
      createInputGateDeploymentDescriptor(
        partition.resultId,
        partition.partitionType,
        { start: 0, end: subpartitions - 1 },
        [descriptor],
      ),
    ],
  );
  if (gate === undefined) throw new Error("no gate");
  const received: Buffer[][] = options.delivered ?? Array.from({ length: subpartitions }, () => []);
  for (let s = received.length; s < subpartitions; s++) received.push([]);
  let afterFirstBuffer = options.afterFirstBuffer;
  gate.setup();
  gate.requestPartitions();
  try {
    const deadline = Date.now() + 60_000;
    while (!gate.isFinished()) {
      if (Date.now() > deadline) throw new Error("the gate did not finish within 60 s");
      const next = gate.pollNext();
      if (next === undefined) {
        await gate.getAvailableFuture();
        continue;
      }
      if (next.buffer !== undefined) {
        received[next.channelIndex]?.push(Buffer.from(next.buffer.readableView()));
        next.buffer.recycleBuffer();
        const pause = afterFirstBuffer;
        afterFirstBuffer = undefined;
        await pause?.();
      }
    }
  } finally {
    await gate.close();
  }
  return received.map((chunks) => Buffer.concat(chunks));
}

/** Polls `condition` every 20 ms until it holds, failing after 20 s. */
export async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Every file under a worker's spill folders: where a test finds the partitions it stored. */
export function filesOf(worker: ShuffleWorker): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir)) {
      const file = path.join(dir, entry);
      if (statSync(file).isDirectory()) walk(file);
      else files.push(file);
    }
  };
  for (const folder of worker.environment.fileChannelManager.getFolders()) walk(folder);
  return files;
}
