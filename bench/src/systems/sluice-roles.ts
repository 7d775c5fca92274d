/**
 * Sluice in the benchmark's roles: the throughput producer/consumer (one partition and one gate
 * per run, in environments that live for the whole (case, system)) and the ping-pong peers.
 */
import { Int64Serializer } from "@sluice/core";
import type { NetworkShuffleEnvironment, ResultPartition, SingleInputGate } from "@sluice/network";
import {
  type ChannelSelector,
  KeyGroupStreamPartitioner,
  PollStatus,
  RebalancePartitioner,
  RecordReader,
  type RecordWriter,
} from "@sluice/runtime";
import type { ShuffleDescriptorJSON } from "@sluice/runtime-api";
import {
  type KeyedRecord,
  KeyedRecordSerializer,
  KeyReadingSerializer,
  makeKeyedRecords,
} from "../records.js";
import type {
  DrainResult,
  LatencyParams,
  LatencyPeer,
  PingResult,
  ProduceResult,
  ThroughputConsumer,
  ThroughputParams,
  ThroughputProducer,
} from "../roles.js";
import { ByteThrottle } from "../throttle.js";
import {
  consumePartition,
  producePartition,
  recordWriter,
  runConsumerLoop,
  runProducerLoop,
  type SluiceTransport,
  startEnvironment,
  yieldToEventLoop,
} from "./sluice.js";

/** Flink's default lower bound of max parallelism: the key-group count of keyed routing. */
const MAX_PARALLELISM = 128;

function selectorOf(params: ThroughputParams): ChannelSelector<KeyedRecord> {
  return params.selector === "keyed"
    ? new KeyGroupStreamPartitioner<KeyedRecord, number>((r) => r.key, MAX_PARALLELISM)
    : new RebalancePartitioner<KeyedRecord>();
}

/** Waits until the partition was fully consumed and released, then closes it. */
async function retirePartition(partition: ResultPartition, timeoutMs = 5_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!partition.isReleased() && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  partition.close();
  if (!partition.isReleased()) partition.release();
}

export class SluiceThroughputProducer implements ThroughputProducer {
  private env: NetworkShuffleEnvironment | undefined;
  private partition: ResultPartition | undefined;

  constructor(
    private readonly transport: SluiceTransport,
    private readonly params: ThroughputParams,
  ) {}

  async prepare(): Promise<unknown> {
    this.env ??= await startEnvironment(this.transport, this.params.config);
    const { partition, descriptor } = await producePartition(
      this.env,
      this.params.config,
      this.params.channels,
    );
    this.partition = partition;
    return descriptor;
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const partition = this.partition as ResultPartition;
    const p = this.params;
    if (p.recordKind === "int64") {
      // Flink's benchmark shape: the same LongValue emitted over and over, round-robin.
      const writer = recordWriter<bigint>(
        partition,
        Int64Serializer.INSTANCE,
        new RebalancePartitioner<bigint>(),
        p.bufferTimeoutMs,
      );
      const value = 0n;
      const { sent, elapsedMs } = await runProducerLoop(
        writer,
        partition,
        () => value,
        durationMs,
        p.producerBatch,
      );
      return { sent, keySum: 0, elapsedMs, extra: this.partitionStats(partition) };
    }
    const records = makeKeyedRecords(p.recordSize);
    const mask = records.length - 1;
    const writer: RecordWriter<KeyedRecord> = recordWriter(
      partition,
      new KeyedRecordSerializer(p.recordSize),
      selectorOf(p),
      p.bufferTimeoutMs,
    );
    const { sent, elapsedMs } = await runProducerLoop(
      writer,
      partition,
      (i) => records[i & mask] as KeyedRecord,
      durationMs,
      p.producerBatch,
    );
    // Keys are i & mask for i in [0, sent).
    let keySum = 0;
    for (let i = 0; i < sent; i++) keySum = (keySum + (i & mask)) | 0;
    return { sent, keySum, elapsedMs, extra: this.partitionStats(partition) };
  }

  private partitionStats(partition: ResultPartition): Record<string, unknown> {
    return {
      numBuffersOut: partition.metrics.numBuffersOut,
      numBytesOut: partition.metrics.numBytesOut,
      backPressuredTimeMs: partition.metrics.backPressuredTimeMs,
    };
  }

  async cleanup(): Promise<void> {
    const partition = this.partition;
    this.partition = undefined;
    if (partition !== undefined) await retirePartition(partition);
  }

  /** Segments of the NetworkBufferPool not back yet (0 when nothing leaked). */
  missingSegments(): number {
    const pool = this.env?.networkBufferPool;
    return pool === undefined
      ? 0
      : pool.totalNumberOfMemorySegments - pool.getNumberOfAvailableMemorySegments();
  }

  async close(): Promise<void> {
    await this.cleanup();
    await this.env?.close();
    this.env = undefined;
  }
}

export class SluiceThroughputConsumer implements ThroughputConsumer {
  private env: NetworkShuffleEnvironment | undefined;
  private gate: SingleInputGate | undefined;

  constructor(
    private readonly transport: SluiceTransport,
    private readonly params: ThroughputParams,
  ) {}

  async connect(endpoint: unknown): Promise<void> {
    this.env ??= await startEnvironment(this.transport, this.params.config);
    this.gate = consumePartition(this.env, endpoint as ShuffleDescriptorJSON, this.params.channels);
  }

  async drain(): Promise<DrainResult> {
    const gate = this.gate as SingleInputGate;
    const p = this.params;
    if (p.recordKind === "int64") {
      const reader = new RecordReader<bigint>(gate, Int64Serializer.INSTANCE);
      const result = await runConsumerLoop(reader, () => {}, p.consumerBatch);
      reader.close();
      return { ...result, keySum: 0, extra: this.gateStats(gate) };
    }
    const reader = new RecordReader<number>(gate, new KeyReadingSerializer(p.recordSize));
    let keySum = 0;
    const onRecord = (key: number) => {
      keySum = (keySum + key) | 0;
    };
    const result =
      p.consumerBytesPerSecond === undefined
        ? await runConsumerLoop(reader, onRecord, p.consumerBatch)
        : await throttledConsumerLoop(reader, onRecord, p.consumerBytesPerSecond, p.recordSize + 4);
    reader.close();
    return { ...result, keySum, extra: this.gateStats(gate) };
  }

  private gateStats(gate: SingleInputGate): Record<string, unknown> {
    return { numBytesIn: gate.metrics.numBytesIn, numBuffersIn: gate.metrics.numBuffersIn };
  }

  async cleanup(): Promise<void> {
    const gate = this.gate;
    this.gate = undefined;
    await gate?.close();
  }

  async close(): Promise<void> {
    await this.cleanup();
    await this.env?.close();
    this.env = undefined;
  }
}

/** A consumer that reads at most `bytesPerSecond` (case 5): the rest waits in the network. */
async function throttledConsumerLoop<T>(
  reader: RecordReader<T>,
  onRecord: (record: T) => void,
  bytesPerSecond: number,
  framedRecordBytes: number,
): Promise<{ received: number; timedRecords: number; timedMs: number }> {
  let paused = false;
  const throttle = new ByteThrottle(
    bytesPerSecond,
    () => {
      paused = true;
    },
    () => {
      paused = false;
    },
  );
  let count = 0;
  let first = -1;
  let last = -1;
  try {
    for (;;) {
      if (paused) {
        await throttle.nextTick();
        continue;
      }
      const allowed = Math.max(1, Math.floor(throttle.available() / framedRecordBytes));
      const before = count;
      const status = reader.pollRecords((r) => {
        count++;
        onRecord(r);
      }, allowed);
      if (count > before) {
        const now = performance.now();
        if (first < 0) first = now;
        last = now;
        throttle.consumed((count - before) * framedRecordBytes);
      }
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToEventLoop();
    }
  } finally {
    throttle.stop();
  }
  return { received: count, timedRecords: count, timedMs: last - first };
}

/**
 * One side of the Sluice ping-pong: a partition of one subpartition towards the other side and a
 * gate reading the other side's partition, both with buffer timeout 0 (flush after every record).
 */
export class SluiceLatencyPeer implements LatencyPeer {
  private env: NetworkShuffleEnvironment | undefined;
  private partition: ResultPartition | undefined;
  private gate: SingleInputGate | undefined;
  private readonly record: KeyedRecord;

  constructor(
    private readonly transport: SluiceTransport,
    // Both sides are alike (a partition each way); the role only decides who pings.
    _role: "pinger" | "ponger",
    private readonly params: LatencyParams,
  ) {
    this.record = makeKeyedRecords(params.recordSize)[7] as KeyedRecord;
  }

  async prepare(): Promise<unknown> {
    this.env = await startEnvironment(this.transport, this.params.config);
    const { partition, descriptor } = await producePartition(this.env, this.params.config, 1);
    this.partition = partition;
    return descriptor;
  }

  async connect(endpoint: unknown): Promise<void> {
    this.gate = consumePartition(
      this.env as NetworkShuffleEnvironment,
      endpoint as ShuffleDescriptorJSON,
      1,
    );
  }

  private writer(): RecordWriter<KeyedRecord> {
    return recordWriter(
      this.partition as ResultPartition,
      new KeyedRecordSerializer(this.params.recordSize),
      new RebalancePartitioner<KeyedRecord>(),
      0,
    );
  }

  async ping({ count }: { count: number }): Promise<PingResult> {
    const writer = this.writer();
    const reader = new RecordReader<number>(
      this.gate as SingleInputGate,
      new KeyReadingSerializer(this.params.recordSize),
    );
    const samples: number[] = new Array(count);
    let got = 0;
    const onRecord = () => {
      got++;
    };
    for (let i = 0; i < count; i++) {
      const start = performance.now();
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(this.record);
      const want = got + 1;
      while (got < want) {
        const status = reader.pollRecords(onRecord, 1);
        if (got >= want) break;
        if (status === PollStatus.END_OF_INPUT) throw new Error("ponger ended early");
        await reader.getAvailableFuture();
      }
      samples[i] = (performance.now() - start) * 1000;
    }
    writer.close();
    (this.partition as ResultPartition).finish();
    // Wait for the ponger's EndOfPartition, so both sides end cleanly.
    for (;;) {
      const status = reader.pollRecords(onRecord);
      if (status === PollStatus.END_OF_INPUT) break;
      await reader.getAvailableFuture();
    }
    reader.close();
    return { samplesUs: samples };
  }

  async serve(): Promise<{ echoed: number }> {
    const writer = this.writer();
    const reader = new RecordReader<number>(
      this.gate as SingleInputGate,
      new KeyReadingSerializer(this.params.recordSize),
    );
    let echoed = 0;
    const record = this.record;
    const echo = () => {
      writer.emit(record);
      echoed++;
    };
    for (;;) {
      const status = reader.pollRecords(echo);
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      if (!writer.isAvailable()) await writer.getAvailableFuture();
    }
    writer.close();
    (this.partition as ResultPartition).finish();
    reader.close();
    return { echoed };
  }

  async close(): Promise<void> {
    await this.gate?.close();
    if (this.partition !== undefined) await retirePartition(this.partition, 2_000);
    await this.env?.close();
  }
}
