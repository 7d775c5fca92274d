import {
  ExecutionAttemptID,
  frameRecord,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  type LocalBufferPool,
  ResultPartitionID,
  TaskEvent,
} from "@sluice/core";
import {
  createInputGateDeploymentDescriptor,
  createPartitionInfo,
  createResultPartitionDeploymentDescriptor,
  createUnknownShuffleDescriptor,
  type PartitionDescriptor,
  ResultPartitionType,
  readableConfigOf,
} from "@sluice/runtime-api";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LocalInputChannel } from "../consumer/local-input-channel.js";
import type { SingleInputGate } from "../consumer/single-input-gate.js";
import { UnknownInputChannel } from "../consumer/unknown-input-channel.js";
import type { ListenOptions, Transport } from "../netty/transport/transport.js";
import { TRANSPORT_WARNING_TYPE } from "../netty/transport/transport-warning.js";
import type { PipelinedResultPartition } from "../partition/pipelined-result-partition.js";
import {
  consume,
  deployAllToAll,
  environmentContext,
  makeRecord,
  RecordChecker,
  RUNNING_PRODUCER,
} from "../test-support/shuffle-fixture.js";
import { NetworkShuffleEnvironment } from "./network-shuffle-environment.js";
import { NetworkShuffleMaster } from "./network-shuffle-master.js";
import { LocalShuffleServiceFactory } from "./network-shuffle-service-factory.js";
import "@sluice/core/testing";

const SEGMENT_SIZE = 4096;
const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Registers one pipelined partition (of one subpartition unless told), produced on `env` by
 * `producerAttempt`, with a shuffle master: what a job master does before it deploys the
 * producer.
 */
async function registerOnePartition(
  env: NetworkShuffleEnvironment,
  {
    numberOfSubpartitions = 1,
    producerAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0),
  } = {},
) {
  const master = new NetworkShuffleMaster({
    configuration: readableConfigOf(config),
    onFatalError: (error) => {
      throw error;
    },
  });
  const type = ResultPartitionType.PIPELINED_BOUNDED;
  const resultId = new IntermediateDataSetID();
  const partitionDescriptor: PartitionDescriptor = {
    resultId,
    totalNumberOfPartitions: 1,
    partitionId: new IntermediateResultPartitionID(resultId, 0),
    partitionType: type,
    numberOfSubpartitions,
    connectionIndex: 0,
    isBroadcast: false,
    isAllToAllDistribution: true,
  };
  const descriptor = await master.registerPartitionWithProducer(new JobID(), partitionDescriptor, {
    producerLocation: env.resourceId,
    producerExecutionId: producerAttempt,
    address: "127.0.0.1",
    dataPort: env.getDataPort(),
  });
  return { type, resultId, partitionDescriptor, producerAttempt, descriptor };
}

/**
 * Deploys a consumer of `partitionId` on `env` whose one channel does not know the producer's
 * location yet (an unknown channel), set up and requesting.
 */
function deployConsumerOfUnknownProducer(
  env: NetworkShuffleEnvironment,
  resultId: IntermediateDataSetID,
  type: ResultPartitionType,
  partitionId: ResultPartitionID,
) {
  const consumerAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
  const [gate] = env.createInputGates(
    env.createShuffleIOOwnerContext("consumer", consumerAttempt),
    RUNNING_PRODUCER,
    [
      createInputGateDeploymentDescriptor(resultId, type, { start: 0, end: 0 }, [
        createUnknownShuffleDescriptor(partitionId),
      ]),
    ],
  ) as [SingleInputGate];
  gate.setup();
  gate.requestPartitions();
  return { consumerAttempt, gate };
}

describe("NetworkShuffleEnvironment in one process", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("replaces an unknown channel through updatePartitionInfo with a real descriptor, then data flows", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    expect(await env.start()).toBe(-1);
    const { type, resultId, partitionDescriptor, producerAttempt, descriptor } =
      await registerOnePartition(env);

    // The consumer is deployed first: its producer's location is unknown.
    const { consumerAttempt, gate } = deployConsumerOfUnknownProducer(
      env,
      resultId,
      type,
      descriptor.resultPartitionId,
    );
    expect(gate.getChannel(0)).toBeInstanceOf(UnknownInputChannel);
    expect(gate.pollNext()).toBeUndefined();

    const [writer] = env.createResultPartitionWriters(
      env.createShuffleIOOwnerContext("producer", producerAttempt),
      [createResultPartitionDeploymentDescriptor(partitionDescriptor, descriptor, 128)],
    ) as [PipelinedResultPartition];
    writer.setup();
    for (let seq = 0; seq < 3; seq++) writer.emitRecord(frameRecord(makeRecord(0, 0, seq, 10)), 0);
    writer.flushAll();
    expect(gate.pollNext()).toBeUndefined();

    // Another consumer attempt or data set is not affected.
    expect(
      env.updatePartitionInfo(new ExecutionAttemptID(), createPartitionInfo(resultId, descriptor)),
    ).toBe(false);
    expect(
      env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor)),
    ).toBe(true);
    expect(gate.getChannel(0)).toBeInstanceOf(LocalInputChannel);
    expect(
      env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor)),
    ).toBe(false);

    const checker = new RecordChecker(0, 1);
    writer.finish();
    await consume(gate, checker);
    expect(checker.nextSeq).toEqual([3]);
    await gate.close();
    writer.close();
    expect(writer.isReleased()).toBe(true);
    const pool = env.networkBufferPool;
    expect(pool).toHaveAllSegmentsAvailable();
  });

  it("stops a producer at its pool bound while the consumer does not read, then resumes and delivers everything", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    await env.start();
    const global = env.networkBufferPool;
    const job = await deployAllToAll(env, env, 1, 1, config);
    const writer = job.writers[0] as PipelinedResultPartition;
    const gate = job.gates[0] as SingleInputGate;
    writer.setup();
    gate.setup();
    gate.requestPartitions();
    const outPool = writer.getBufferPool() as LocalBufferPool;
    // One subpartition: [2, 1 × 2 + 8] buffers, and max-buffers-per-channel 10.
    expect(outPool.getMaxNumberOfMemorySegments()).toBe(10);
    const padding = 1000; // 1016-byte records: about 4 per buffer, some spanning two

    let maxOutPoolUsed = 0;
    const sample = () => {
      maxOutPoolUsed = Math.max(maxOutPoolUsed, outPool.bestEffortGetNumOfUsedBuffers());
      expect(global.getNumberOfUsedMemorySegments()).toBeLessThanOrEqual(
        global.totalNumberOfMemorySegments,
      );
    };

    // Phase 1: the consumer does not read. The producer writes only while available.
    let emitted = 0;
    while (writer.isAvailable()) {
      writer.emitRecord(frameRecord(makeRecord(0, 0, emitted++, padding)), 0);
      sample();
      expect(emitted).toBeLessThan(1_000); // it must stop on its own
    }
    const atBlock = emitted;
    expect(atBlock * (12 + padding + 4)).toBeLessThanOrEqual(11 * SEGMENT_SIZE);
    let resumed = false;
    void writer.getAvailableFuture().then(() => {
      resumed = true;
    });
    for (let i = 0; i < 20; i++) await turn();
    expect(resumed).toBe(false);
    expect(writer.isAvailable()).toBe(false);
    expect(emitted).toBe(atBlock);
    // Bounded: the pool's maximum, plus at most one overdraft buffer for a spanning record.
    expect(maxOutPoolUsed).toBeLessThanOrEqual(11);

    // Phase 2: a slow consumer (two buffers per turn); the producer resumes and finishes.
    const total = 2_000;
    const checker = new RecordChecker(0, 1);
    const produce = async () => {
      while (emitted < total) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emitRecord(frameRecord(makeRecord(0, 0, emitted++, padding)), 0);
        sample();
      }
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.finish();
    };
    const consume = async () => {
      while (!gate.isFinished()) {
        for (let i = 0; i < 2; i++) {
          const next = gate.pollNext();
          if (next === undefined) break;
          if (next.buffer !== undefined) checker.accept(next.channelIndex, next.buffer);
        }
        await turn();
      }
    };
    await Promise.all([produce(), consume()]);
    expect(resumed).toBe(true);
    expect(checker.nextSeq).toEqual([total]);
    expect(checker.hasUnfinishedData()).toBe(false);
    expect(maxOutPoolUsed).toBeLessThanOrEqual(11);
    expect(writer.metrics.backPressuredTimeMs).toBeGreaterThanOrEqual(0);

    await gate.close();
    writer.close();
    expect(global).toHaveAllSegmentsAvailable();
    expect(env.getPartitionsOccupyingLocalResources()).toEqual([]);
  });

  it("replaces every unknown channel of a gate reading a range of subpartitions, matched by partition id, then the gate finishes", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    await env.start();
    // The consumer was deployed against a first attempt of the producer; the attempt that
    // actually runs (and is announced through updatePartitionInfo) is a later one.
    const firstAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
    const runningAttempt = new ExecutionAttemptID(undefined, undefined, 0, 1);
    const { type, resultId, partitionDescriptor, descriptor } = await registerOnePartition(env, {
      numberOfSubpartitions: 3,
      producerAttempt: runningAttempt,
    });
    const consumerAttempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
    const [gate] = env.createInputGates(
      env.createShuffleIOOwnerContext("consumer", consumerAttempt),
      RUNNING_PRODUCER,
      [
        createInputGateDeploymentDescriptor(resultId, type, { start: 0, end: 2 }, [
          createUnknownShuffleDescriptor(
            new ResultPartitionID(partitionDescriptor.partitionId, firstAttempt),
          ),
        ]),
      ],
    ) as [SingleInputGate];
    gate.setup();
    gate.requestPartitions();
    expect(gate.numberOfInputChannels).toBe(3);

    expect(
      env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor)),
    ).toBe(true);
    for (let i = 0; i < 3; i++) expect(gate.getChannel(i)).toBeInstanceOf(LocalInputChannel);

    const [writer] = env.createResultPartitionWriters(
      env.createShuffleIOOwnerContext("producer", runningAttempt),
      [createResultPartitionDeploymentDescriptor(partitionDescriptor, descriptor, 128)],
    ) as [PipelinedResultPartition];
    writer.setup();
    for (let sub = 0; sub < 3; sub++)
      writer.emitRecord(frameRecord(makeRecord(sub, 0, 0, 10)), sub);
    writer.finish();
    let records = 0;
    while (!gate.isFinished()) {
      const next = gate.pollNext();
      if (next === undefined) {
        await gate.getAvailableFuture();
        continue;
      }
      if (next.buffer !== undefined) {
        records++;
        next.buffer.recycleBuffer();
      }
    }
    expect(records).toBe(3);
    await gate.close();
    writer.close();
    const pool = env.networkBufferPool;
    expect(pool.getNumberOfAvailableMemorySegments()).toBe(pool.totalNumberOfMemorySegments);
  });

  it("keeps the task events sent while a channel is unknown and replays them once it is known", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    await env.start();
    const { type, resultId, partitionDescriptor, producerAttempt, descriptor } =
      await registerOnePartition(env);
    const received: string[] = [];
    env.taskEventDispatcher.subscribe(descriptor.resultPartitionId, (event) =>
      received.push(event.typeName),
    );
    const { consumerAttempt, gate } = deployConsumerOfUnknownProducer(
      env,
      resultId,
      type,
      descriptor.resultPartitionId,
    );
    gate.sendTaskEvent(new TaskEvent("first", new Uint8Array(0)));
    gate.sendTaskEvent(new TaskEvent("second", new Uint8Array(0)));
    expect(received).toEqual([]);
    const [writer] = env.createResultPartitionWriters(
      env.createShuffleIOOwnerContext("producer", producerAttempt),
      [createResultPartitionDeploymentDescriptor(partitionDescriptor, descriptor, 128)],
    ) as [PipelinedResultPartition];
    writer.setup();
    env.updatePartitionInfo(consumerAttempt, createPartitionInfo(resultId, descriptor));
    expect(received).toEqual(["first", "second"]);
    gate.sendTaskEvent(new TaskEvent("third", new Uint8Array(0)));
    expect(received).toEqual(["first", "second", "third"]); // no replay once every channel is known
    await gate.close();
    writer.release();
    writer.close();
  });
});

describe("NetworkShuffleEnvironment data server", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("reports an error of its listening data server as a SluiceTransportWarning naming the worker", async () => {
    let listen: ListenOptions | undefined;
    const transport: Transport = {
      name: "fake",
      listen: async (options) => {
        listen = options;
        return { port: 4321, host: options.host, close: async () => {} };
      },
      connect: () => Promise.reject(new Error("not used")),
    };
    const warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => {});
    const env = new NetworkShuffleEnvironment(environmentContext(config), transport);
    try {
      expect(await env.start()).toBe(4321);
      listen?.onError?.(new Error("accept EMFILE"));
      expect(warnings).toHaveBeenCalledWith(
        `data server of worker ${env.resourceId} (fake on ${env.settings.bindHost}:4321): accept EMFILE`,
        expect.objectContaining({ type: TRANSPORT_WARNING_TYPE }),
      );
    } finally {
      await env.close();
    }
  });
});
