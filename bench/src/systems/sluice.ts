/**
 * Sluice through its real SPI: a shuffle environment per process (TCP or WebSocket plugin), a
 * NetworkShuffleMaster in the producer process that registers each partition, the shuffle
 * descriptor shipped to the consumer process as JSON (ShuffleDescriptorCodec), a RecordWriter with
 * a channel selector and the buffer timeout on the producer side, an InputGate and a RecordReader
 * on the consumer side.
 */
import { tmpdir } from "node:os";
import {
  ExecutionAttemptID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  ResourceID,
  type TypeSerializer,
} from "@sluice/core";
import type { NetworkShuffleEnvironment, ResultPartition, SingleInputGate } from "@sluice/network";
import {
  bufferTimeoutOf,
  type ChannelSelector,
  createRecordWriter,
  PollStatus,
  type RecordReader,
  type RecordWriter,
} from "@sluice/runtime";
import {
  createInputGateDeploymentDescriptor,
  createResultPartitionDeploymentDescriptor,
  type PartitionProducerStateProvider,
  ResultPartitionType,
  readableConfigOf,
  ShuffleDescriptorCodec,
  type ShuffleDescriptorJSON,
  type ShuffleEnvironmentContext,
  type ShuffleServiceFactory,
} from "@sluice/runtime-api";
import { TcpShuffleServiceFactory } from "@sluice/shuffle-tcp";

export type SluiceTransport = "tcp" | "ws" | "local";
export type RawConfig = Record<string, unknown>;

const RUNNING: PartitionProducerStateProvider = {
  requestPartitionProducerState: async () => "RUNNING",
};

/** Loads the plugin's factory; the WS one may not be built yet (then the reason is thrown). */
export async function loadFactory(transport: SluiceTransport): Promise<ShuffleServiceFactory> {
  if (transport === "tcp")
    return new TcpShuffleServiceFactory() as unknown as ShuffleServiceFactory;
  if (transport === "local") {
    const { LocalShuffleServiceFactory } = await import("@sluice/network");
    return new LocalShuffleServiceFactory() as unknown as ShuffleServiceFactory;
  }
  // Not a static import: the WebSocket plugin is built by another package and may lag behind.
  const specifier = "@sluice/shuffle-ws";
  let module: Record<string, unknown>;
  try {
    module = (await import(specifier)) as Record<string, unknown>;
  } catch (error) {
    throw new Error(`@sluice/shuffle-ws cannot be loaded: ${(error as Error).message}`);
  }
  const Factory = module.WsShuffleServiceFactory as (new () => ShuffleServiceFactory) | undefined;
  if (typeof Factory !== "function") {
    throw new Error("@sluice/shuffle-ws does not export WsShuffleServiceFactory yet");
  }
  return new Factory();
}

/** Whether the WS plugin can be loaded in this checkout (asked once by the parent). */
export async function wsAvailability(): Promise<string | undefined> {
  try {
    await loadFactory("ws");
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

function context(config: RawConfig): ShuffleEnvironmentContext {
  return {
    configuration: readableConfigOf(config),
    taskExecutorResourceId: new ResourceID(),
    networkMemorySize: 0,
    localCommunicationOnly: false,
    hostAddress: "127.0.0.1",
    numberOfSlots: 1,
    tmpDirPaths: [tmpdir()],
  };
}

/** Creates and starts one process's shuffle environment (data server on 127.0.0.1, port 0). */
export async function startEnvironment(
  transport: SluiceTransport,
  config: RawConfig,
): Promise<NetworkShuffleEnvironment> {
  const factory = await loadFactory(transport);
  const env = factory.createShuffleEnvironment(
    context({ "taskmanager.data.port": 0, "taskmanager.data.bind-host": "127.0.0.1", ...config }),
  ) as unknown as NetworkShuffleEnvironment;
  await env.start();
  return env;
}

/** The producer side of one exchange: a registered, set-up partition and its descriptor. */
export interface ProducedPartition {
  readonly partition: ResultPartition;
  readonly descriptor: ShuffleDescriptorJSON;
}

let partitionCounter = 0;

/**
 * Registers a pipelined-bounded partition of `subpartitions` subpartitions with a master (the
 * "JobMaster" of the benchmark lives in the producer process), creates its writer in `env` and
 * sets it up. The descriptor is returned as JSON, ready to cross the process boundary.
 */
export async function producePartition(
  env: NetworkShuffleEnvironment,
  config: RawConfig,
  subpartitions: number,
): Promise<ProducedPartition> {
  const { NetworkShuffleMaster } = await import("@sluice/network");
  const master = new NetworkShuffleMaster({
    configuration: readableConfigOf(config),
    onFatalError: (error) => {
      throw error;
    },
  });
  const resultId = new IntermediateDataSetID();
  const index = partitionCounter++;
  const partitionDescriptor = {
    resultId,
    totalNumberOfPartitions: 1,
    partitionId: new IntermediateResultPartitionID(resultId, 0),
    partitionType: ResultPartitionType.PIPELINED_BOUNDED,
    numberOfSubpartitions: subpartitions,
    connectionIndex: 0,
    isBroadcast: false,
    isAllToAllDistribution: true,
  };
  const attempt = new ExecutionAttemptID(undefined, undefined, 0, 0);
  const shuffleDescriptor = await master.registerPartitionWithProducer(
    new JobID(),
    partitionDescriptor,
    {
      producerLocation: env.resourceId,
      producerExecutionId: attempt,
      address: "127.0.0.1",
      dataPort: env.getDataPort(),
    },
  );
  const ctx = env.createShuffleIOOwnerContext(`bench producer ${index}`, attempt);
  const [partition] = env.createResultPartitionWriters(ctx, [
    createResultPartitionDeploymentDescriptor(partitionDescriptor, shuffleDescriptor, 128),
  ]);
  (partition as ResultPartition).setup();
  return {
    partition: partition as ResultPartition,
    descriptor: ShuffleDescriptorCodec.toJSON(shuffleDescriptor),
  };
}

/**
 * Creates, sets up and requests the consumer's gate over subpartitions `[0, channels)` of the
 * partition the JSON descriptor names (one input channel per subpartition, one connection).
 */
export function consumePartition(
  env: NetworkShuffleEnvironment,
  descriptorJson: ShuffleDescriptorJSON,
  channels: number,
): SingleInputGate {
  const descriptor = ShuffleDescriptorCodec.fromJSON(descriptorJson);
  const resultId = descriptor.resultPartitionId.partitionId.intermediateDataSetID;
  const ctx = env.createShuffleIOOwnerContext(
    "bench consumer",
    new ExecutionAttemptID(undefined, undefined, 0, 0),
  );
  const [gate] = env.createInputGates(ctx, RUNNING, [
    createInputGateDeploymentDescriptor(
      resultId,
      ResultPartitionType.PIPELINED_BOUNDED,
      { start: 0, end: channels - 1 },
      [descriptor],
    ),
  ]);
  const g = gate as SingleInputGate;
  g.setup();
  g.requestPartitions();
  return g;
}

/** A RecordWriter over `partition` with Sluice's buffer timeout semantics. */
export function recordWriter<T>(
  partition: ResultPartition,
  serializer: TypeSerializer<T>,
  selector: ChannelSelector<T>,
  bufferTimeoutMs: number,
): RecordWriter<T> {
  return createRecordWriter(partition, serializer, selector, {
    taskName: "bench producer",
    bufferTimeout: bufferTimeoutOf(true, bufferTimeoutMs),
  });
}

export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The producer task loop of ARCHITECTURE.md §2: emit synchronously while the writer is
 * available, await only when it is not, and yield to the event loop after every `batch` records
 * (so the data server, the credit messages and the OutputFlusher timer get their turn). Emits
 * `next(i)` until `durationMs` passed, then finishes the partition (EndOfPartition).
 */
export async function runProducerLoop<T>(
  writer: RecordWriter<T>,
  partition: ResultPartition,
  next: (i: number) => T,
  durationMs: number,
  batch: number,
): Promise<{ sent: number; elapsedMs: number }> {
  const start = performance.now();
  const end = start + durationMs;
  let sent = 0;
  for (;;) {
    for (let i = 0; i < batch; i++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(next(sent));
      sent++;
    }
    if (performance.now() >= end) break;
    await yieldToEventLoop();
  }
  if (!partition.isAvailable()) await partition.getAvailableFuture();
  writer.flushAll();
  writer.close();
  partition.finish();
  return { sent, elapsedMs: performance.now() - start };
}

/** What a consumer loop measured. */
export interface ConsumeResult {
  readonly received: number;
  readonly keySum: number;
  /** Records received after the first poll that returned records (the timed ones). */
  readonly timedRecords: number;
  /** ms between the first and the last poll that returned records. */
  readonly timedMs: number;
}

/**
 * The consumer task loop: poll records synchronously in batches, await the gate only when it has
 * nothing, yield between batches; stop at EndOfPartition of every channel. Throughput is timed
 * from the first poll that returned records to the last one.
 */
export async function runConsumerLoop<T>(
  reader: RecordReader<T>,
  onRecord: (record: T) => void,
  batch: number,
): Promise<{ received: number; timedRecords: number; timedMs: number }> {
  let received = 0;
  let first = -1;
  let firstCount = 0;
  let last = -1;
  let count = 0;
  const counting = (record: T) => {
    count++;
    onRecord(record);
  };
  for (;;) {
    const before = count;
    const status = reader.pollRecords(counting, batch);
    if (count > before) {
      const now = performance.now();
      if (first < 0) {
        first = now;
        firstCount = count;
      }
      last = now;
    }
    if (status === PollStatus.END_OF_INPUT) break;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await yieldToEventLoop();
  }
  received = count;
  return { received, timedRecords: count - firstCount, timedMs: last - first };
}

/** Network memory for a case, Flink's benchmark rule: max(2048, writers × channels × 4) buffers. */
export function flinkBenchmarkNetworkMemory(channels: number, segmentSize = 32 * 1024): string {
  const buffers = Math.max(2048, channels * 4);
  return `${(buffers * segmentSize) / 1024}kb`;
}
