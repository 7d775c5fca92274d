/**
 * Sluice in the benchmark's roles: the throughput producer/consumer (one job, so one partition and
 * one gate, per run, on TaskExecutors that live for the whole (case, system)) and the ping-pong
 * peers.
 */
import type { DataInputDeserializer, DataOutputSerializer, TypeSerializer } from "@sluice/core";
import { PollStatus, type RecordReader, type RecordWriter, type Task } from "@sluice/runtime";
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
  type Exchange,
  type ExchangeSpec,
  type RawConfig,
  runConsumerLoop,
  runProducerLoop,
  runTask,
  type SluiceCode,
  SluiceProcess,
  type SluiceTransport,
  yieldToEventLoop,
} from "./sluice.js";
import { cancelTask, retireExchange, SluiceSide, type SluiceSideParams } from "./sluice-side.js";

/** The serializer name of keyed records in task deployment descriptors. */
const KEYED = "keyed-record";

/**
 * Keyed records as every bench TaskExecutor registers them: written from a KeyedRecord, read
 * back as the key alone, so no consumer allocates per record. One name serves both sides, also
 * in a process that writes and reads (the ping-pong peers, case 0).
 */
class KeyedRecordFormat implements TypeSerializer<KeyedRecord | number> {
  readonly name: string;
  private readonly writing: KeyedRecordSerializer;
  private readonly reading: KeyReadingSerializer;

  constructor(recordSize: number) {
    this.writing = new KeyedRecordSerializer(recordSize);
    this.reading = new KeyReadingSerializer(recordSize);
    this.name = this.writing.name;
  }

  serialize(value: KeyedRecord | number, out: DataOutputSerializer): void {
    this.writing.serialize(value as KeyedRecord, out);
  }

  serializeHead(value: KeyedRecord | number, out: DataOutputSerializer): Uint8Array {
    return this.writing.serializeHead(value as KeyedRecord, out);
  }

  deserialize(input: DataInputDeserializer): number {
    return this.reading.deserialize(input);
  }
}

/** What every bench TaskExecutor registers for records of `recordSize` bytes. */
export function benchCode(recordSize: number): SluiceCode {
  return {
    serializers: { [KEYED]: new KeyedRecordFormat(recordSize) },
    keySelectors: { key: (record: KeyedRecord) => record.key },
  };
}

/** A run's exchange: keyed or round-robin over `channels` subpartitions. */
export function exchangeOf(
  params: Pick<ThroughputParams, "channels" | "selector" | "recordKind">,
): ExchangeSpec {
  return {
    channels: params.channels,
    partitioner:
      params.selector === "keyed" ? { name: "HASH", keySelector: "key" } : { name: "REBALANCE" },
    serializer: params.recordKind === "int64" ? "int64" : KEYED,
  };
}

/** What a side of a throughput or batch system starts its process with. */
export function sideParams(params: {
  readonly config: RawConfig;
  readonly recordSize: number;
  readonly metricsScrapeIntervalMs?: number;
}): SluiceSideParams {
  return {
    config: params.config,
    code: benchCode(params.recordSize),
    metricsScrapeIntervalMs: params.metricsScrapeIntervalMs,
  };
}

export class SluiceThroughputProducer implements ThroughputProducer {
  private readonly side: SluiceSide<Exchange>;

  constructor(
    transport: SluiceTransport,
    private readonly params: ThroughputParams,
  ) {
    this.side = new SluiceSide<Exchange>(transport, sideParams(params), retireExchange);
  }

  async prepare(): Promise<unknown> {
    const sluice = await this.side.process();
    const exchange = await sluice.deployExchange(exchangeOf(this.params));
    this.side.deployed = exchange;
    return exchange.consumer;
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const task = (this.side.deployed as Exchange).producer;
    const p = this.params;
    const int64 = p.recordKind === "int64";
    const records = makeKeyedRecords(p.recordSize);
    const mask = records.length - 1;
    // Flink's benchmark shape for int64: the same LongValue emitted over and over.
    const next = int64 ? () => 0n : (i: number) => records[i & mask] as KeyedRecord;
    const { sent, elapsedMs } = await runTask(task, (t) =>
      runProducerLoop(t.writer<unknown>(), next, durationMs, p.producerBatch),
    );
    // Keys are i & mask for i in [0, sent).
    let keySum = 0;
    for (let i = 0; !int64 && i < sent; i++) keySum = (keySum + (i & mask)) | 0;
    const metrics = task.partitions[0]?.metrics;
    const { numBuffersOut, numBytesOut, backPressuredTimeMs } = metrics ?? {};
    return { sent, keySum, elapsedMs, extra: { numBuffersOut, numBytesOut, backPressuredTimeMs } };
  }

  cleanup(): Promise<void> {
    return this.side.cleanup();
  }

  close(): Promise<void> {
    return this.side.close();
  }
}

export class SluiceThroughputConsumer implements ThroughputConsumer {
  private readonly side: SluiceSide<Task>;

  constructor(
    transport: SluiceTransport,
    private readonly params: ThroughputParams,
  ) {
    this.side = new SluiceSide(transport, sideParams(params), cancelTask);
  }

  async connect(endpoint: unknown): Promise<void> {
    const sluice = await this.side.process();
    this.side.deployed = await sluice.executor.deployTask(endpoint);
  }

  async drain(): Promise<DrainResult> {
    const task = this.side.deployed as Task;
    const p = this.params;
    let keySum = 0;
    // int64 records (bigint) are only counted; keyed ones arrive as their key.
    const onRecord =
      p.recordKind === "int64"
        ? () => {}
        : (key: number) => {
            keySum = (keySum + key) | 0;
          };
    const rate = p.consumerBytesPerSecond;
    const result = await runTask(task, (t) =>
      rate === undefined
        ? runConsumerLoop(t.reader<number>(), onRecord, p.consumerBatch)
        : throttledConsumerLoop(t.reader<number>(), onRecord, rate, p.recordSize + 4),
    );
    const { numBytesIn, numBuffersIn } = task.gates[0]?.metrics ?? {};
    return { ...result, keySum, extra: { numBytesIn, numBuffersIn } };
  }

  cleanup(): Promise<void> {
    return this.side.cleanup();
  }

  close(): Promise<void> {
    return this.side.close();
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
 * One side of the Sluice ping-pong: a job of its own towards the other side (one subpartition)
 * and a task reading the other side's job, with buffer timeout 0 (flush after every record).
 * The reading task runs around the writing one: when the writing task returns it finishes its
 * partition, which ends the other side's input; then this side reads its own input to the end.
 */
export class SluiceLatencyPeer implements LatencyPeer {
  private sluice: SluiceProcess | undefined;
  private exchange: Exchange | undefined;
  private input: Task | undefined;
  private readonly record: KeyedRecord;

  constructor(
    private readonly transport: SluiceTransport,
    // Both sides are alike (a job each way); the role only decides who pings.
    _role: "pinger" | "ponger",
    private readonly params: LatencyParams,
  ) {
    this.record = makeKeyedRecords(params.recordSize)[7] as KeyedRecord;
  }

  async prepare(): Promise<unknown> {
    const p = this.params;
    this.sluice = await SluiceProcess.start(this.transport, p.config, benchCode(p.recordSize));
    this.exchange = await this.sluice.deployExchange(
      exchangeOf({ channels: 1, selector: "rebalance", recordKind: "keyed" }),
    );
    return this.exchange.consumer;
  }

  async connect(endpoint: unknown): Promise<void> {
    this.input = await (this.sluice as SluiceProcess).executor.deployTask(endpoint);
  }

  async ping({ count }: { count: number }): Promise<PingResult> {
    const samples: number[] = new Array(count);
    await this.exchangeRecords(async (writer, reader) => {
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
    });
    return { samplesUs: samples };
  }

  async serve(): Promise<{ echoed: number }> {
    let echoed = 0;
    const record = this.record;
    await this.exchangeRecords(async (writer, reader) => {
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
    });
    return { echoed };
  }

  /** Runs both tasks around `body`, then reads the other side's input to its end. */
  private async exchangeRecords(
    body: (writer: RecordWriter<KeyedRecord>, reader: RecordReader<number>) => Promise<void>,
  ): Promise<void> {
    const output = (this.exchange as Exchange).producer;
    await runTask(this.input as Task, async (input) => {
      const reader = input.reader<number>();
      await runTask(output, (out) => body(out.writer<KeyedRecord>(), reader));
      for (;;) {
        const status = reader.pollRecords(() => {});
        if (status === PollStatus.END_OF_INPUT) break;
        await reader.getAvailableFuture();
      }
    });
  }

  async close(): Promise<void> {
    await this.exchange?.retire(2_000);
    await this.sluice?.close();
  }
}
