/**
 * Case 0, run inside one child process: (a) a plain 32 KiB memcpy loop, (b) serialize +
 * deserialize of 100-byte records through 32 KiB segments with @sluice/core alone
 * (serializeRecord → BufferBuilder → BufferConsumer → SpillingAdaptiveSpanningRecordDeserializer),
 * (c) an in-process producer → consumer over 4 local channels through the whole stack
 * (RecordWriter → ResultPartition → LocalInputChannel → InputGate → RecordReader), and the same
 * over 1 channel (every record still hashed, but all appended to one buffer, as core serde
 * appends), (b') (b) routed by key over 4 channels' buffers, the per-record work of (c) without
 * the runtime's layers, (d) (b) with readers that decode whole records: allocating, reusing one record, or
 * reading a view.
 */
import {
  type BufferBuilder,
  type BufferConsumer,
  type DataInputDeserializer,
  DataOutputSerializer,
  type DeserializationResult,
  type LocalBufferPool,
  NetworkBufferPool,
  type RecordHolder,
  SpillingAdaptiveSpanningRecordDeserializer,
  serializeRecord,
} from "@sluice/core";
import { createChannelSelector } from "@sluice/runtime/plugin";
import {
  type KeyedRecord,
  KeyedRecordSerializer,
  KeyReadingSerializer,
  makeKeyedRecords,
  newReusableKeyedRecord,
} from "../records.js";
import { READER_MODES, type ReaderMode } from "../roles.js";
import { runConsumerLoop, runProducerLoop, runTask, SluiceProcess } from "../systems/sluice.js";
import { benchCode, exchangeOf } from "../systems/sluice-roles.js";

export interface CoreArgs {
  readonly recordSize: number;
  readonly durationMs: number;
  readonly warmupMs: number;
  readonly runs: number;
}

export interface CoreResult {
  /** Bytes/s of each memcpy run. */
  readonly memcpyBytesPerSecond: number[];
  /** Records/s of each serialize + deserialize run. */
  readonly serdeRecordsPerSecond: number[];
  /** Records/s of each serialize + deserialize run routed by key over 4 channels' buffers. */
  readonly keyedSerdeRecordsPerSecond: number[];
  /** Records/s of each in-process exchange run (4 keyed channels). */
  readonly localRecordsPerSecond: number[];
  /** Records/s of each in-process exchange run over 1 keyed channel. */
  readonly localOneChannelRecordsPerSecond: number[];
  /**
   * Records/s of serialize + deserialize when the reader decodes whole records (key and a copy
   * of the bytes): allocating a record per record (`getNextRecord` → `deserialize`), into one
   * reused record (`getNextRecordInto` → `deserializeInto`), or reading the key in place from a
   * view (`readNextRecord`, no decode of the bytes).
   */
  readonly readers: Record<ReaderMode, number[]>;
  readonly checks: string[];
}

const SEGMENT = 32 * 1024;
/** Key groups of the keyed serde row's selector: Flink's default max parallelism for small jobs. */
const MAX_PARALLELISM = 128;

/** How serdeRun's reader decodes: only the key (the bench's own format), or whole records. */
type DecodeMode = "key" | ReaderMode;

function memcpyRun(durationMs: number): number {
  const src = Buffer.alloc(SEGMENT, 7);
  const dst = Buffer.alloc(SEGMENT);
  const start = performance.now();
  const end = start + durationMs;
  let bytes = 0;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 256; i++) {
      dst.set(src);
      // Vary one byte so the copy cannot be elided.
      src[i] = dst[SEGMENT - 1 - i] as number;
    }
    bytes += 256 * SEGMENT;
    now = performance.now();
  }
  return bytes / ((now - start) / 1000);
}

function serdeRun(
  pool: LocalBufferPool,
  records: KeyedRecord[],
  recordSize: number,
  durationMs: number,
  checks: string[],
  mode: DecodeMode = "key",
): number {
  const serializer = new KeyedRecordSerializer(recordSize);
  const keyReader = new KeyReadingSerializer(recordSize);
  const recordHolder: RecordHolder<KeyedRecord> = { value: undefined };
  const reuse = newReusableKeyedRecord(recordSize);
  let viewKey = 0;
  const readView = (input: DataInputDeserializer) => {
    viewKey = input.readInt();
  };
  const out = new DataOutputSerializer({ initialCapacity: 256 });
  const deserializer = new SpillingAdaptiveSpanningRecordDeserializer();
  const holder: RecordHolder<number> = { value: undefined };
  const mask = records.length - 1;
  let builder = pool.requestBufferBuilder();
  if (builder === undefined) throw new Error("no buffer for the serde benchmark");
  let consumer = builder.createBufferConsumerFromBeginning();
  let produced = 0;
  let consumed = 0;
  let keySum = 0;
  let expectedKeySum = 0;
  const drainBuffer = () => {
    // Hand the committed bytes to the deserializer and read every complete record out of them.
    const buffer = consumer.build();
    deserializer.setNextBuffer(buffer);
    for (;;) {
      let result: DeserializationResult;
      let key = 0;
      if (mode === "key") {
        result = deserializer.getNextRecord(keyReader, holder);
        key = holder.value as number;
      } else if (mode === "view") {
        result = deserializer.readNextRecord(readView);
        key = viewKey;
      } else {
        result =
          mode === "allocating"
            ? deserializer.getNextRecord(serializer, recordHolder)
            : deserializer.getNextRecordInto(serializer, reuse, recordHolder);
        key = recordHolder.value?.key ?? 0;
      }
      if (result.isFullRecord()) {
        consumed++;
        keySum = (keySum + key) | 0;
      }
      if (result.isBufferConsumed()) break;
    }
  };
  const start = performance.now();
  const end = start + durationMs;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 4096; i++) {
      const record = records[produced & mask] as KeyedRecord;
      expectedKeySum = (expectedKeySum + record.key) | 0;
      const framed = serializeRecord(record, serializer, out);
      let offset = 0;
      while (offset < framed.length) {
        offset += builder.appendAndCommit(framed, offset, framed.length - offset);
        if (builder.isFull()) {
          builder.finish();
          drainBuffer();
          consumer.close();
          builder.close();
          builder = pool.requestBufferBuilder();
          if (builder === undefined) throw new Error("the serde benchmark leaked buffers");
          consumer = builder.createBufferConsumerFromBeginning();
        }
      }
      produced++;
    }
    now = performance.now();
  }
  builder.finish();
  drainBuffer();
  consumer.close();
  builder.close();
  deserializer.clear();
  if (consumed !== produced)
    checks.push(`serde (${mode}): produced ${produced} but deserialized ${consumed}`);
  if (keySum !== expectedKeySum) checks.push(`serde (${mode}): key checksum mismatch`);
  return consumed / ((now - start) / 1000);
}

/** One channel of `keyedSerdeRun`: the buffer being filled and the reader of its bytes. */
interface SerdeLane {
  builder: BufferBuilder;
  consumer: BufferConsumer;
  readonly deserializer: SpillingAdaptiveSpanningRecordDeserializer;
}

/**
 * Core serde with the routing a keyed exchange cannot skip: each record's channel chosen by the
 * runtime's HASH selector (key group, then channel), and appended to that channel's buffer, read
 * back by that channel's deserializer when full. What remains between this and the in-process
 * exchange is the runtime's layers: RecordWriter, ResultPartition, the pool, the local channel,
 * the gate and the reader. Its loop is its own rather than a mode of `serdeRun`: a branch or a lane
 * array in the baseline's loop would change the row every ratio of the case is taken against.
 */
function keyedSerdeRun(
  pool: LocalBufferPool,
  records: KeyedRecord[],
  recordSize: number,
  channels: number,
  durationMs: number,
  checks: string[],
): number {
  const serializer = new KeyedRecordSerializer(recordSize);
  const keyReader = new KeyReadingSerializer(recordSize);
  const selector = createChannelSelector<KeyedRecord, number>("HASH", {
    keySelector: (record) => record.key,
    maxParallelism: MAX_PARALLELISM,
  });
  selector.setup(channels);
  const out = new DataOutputSerializer({ initialCapacity: 256 });
  const holder: RecordHolder<number> = { value: undefined };
  const mask = records.length - 1;
  const newLane = (deserializer: SpillingAdaptiveSpanningRecordDeserializer): SerdeLane => {
    const builder = pool.requestBufferBuilder();
    if (builder === undefined) throw new Error("no buffer for the keyed serde benchmark");
    return { builder, consumer: builder.createBufferConsumerFromBeginning(), deserializer };
  };
  const lanes = Array.from({ length: channels }, () =>
    newLane(new SpillingAdaptiveSpanningRecordDeserializer()),
  );
  let produced = 0;
  let consumed = 0;
  let keySum = 0;
  let expectedKeySum = 0;
  /** Finishes the lane's buffer, reads every complete record out of it, and gives it back. */
  const drain = (lane: SerdeLane) => {
    lane.builder.finish();
    lane.deserializer.setNextBuffer(lane.consumer.build());
    for (;;) {
      const result = lane.deserializer.getNextRecord(keyReader, holder);
      if (result.isFullRecord()) {
        consumed++;
        keySum = (keySum + (holder.value as number)) | 0;
      }
      if (result.isBufferConsumed()) break;
    }
    lane.consumer.close();
    lane.builder.close();
  };
  const start = performance.now();
  const end = start + durationMs;
  let now = start;
  while (now < end) {
    for (let i = 0; i < 4096; i++) {
      const record = records[produced & mask] as KeyedRecord;
      expectedKeySum = (expectedKeySum + record.key) | 0;
      const channel = selector.selectChannel(record);
      const framed = serializeRecord(record, serializer, out);
      let offset = 0;
      while (offset < framed.length) {
        const lane = lanes[channel] as SerdeLane;
        offset += lane.builder.appendAndCommit(framed, offset, framed.length - offset);
        if (lane.builder.isFull()) {
          drain(lane);
          lanes[channel] = newLane(lane.deserializer);
        }
      }
      produced++;
    }
    now = performance.now();
  }
  for (const lane of lanes) {
    drain(lane);
    lane.deserializer.clear();
  }
  if (consumed !== produced) {
    checks.push(`keyed serde: produced ${produced} but deserialized ${consumed}`);
  }
  if (keySum !== expectedKeySum) checks.push("keyed serde: key checksum mismatch");
  return consumed / ((now - start) / 1000);
}

async function localRun(
  recordSize: number,
  durationMs: number,
  checks: string[],
  channels: number,
): Promise<number> {
  const config = { "execution.buffer-timeout.interval": "100ms" };
  const sluice = await SluiceProcess.start("local", config, benchCode(recordSize));
  try {
    const exchange = await sluice.deployExchange(
      exchangeOf({ channels, selector: "keyed", recordKind: "keyed" }),
    );
    const consumer = await sluice.executor.deployTask(exchange.consumer);
    const records = makeKeyedRecords(recordSize);
    const mask = records.length - 1;
    const [produced, consumed] = await Promise.all([
      runTask(exchange.producer, (t) =>
        runProducerLoop(
          t.writer<KeyedRecord>(),
          (i) => records[i & mask] as KeyedRecord,
          durationMs,
          1024,
        ),
      ),
      runTask(consumer, (t) => runConsumerLoop(t.reader<number>(), () => {}, 4096)),
    ]);
    await exchange.retire();
    if (produced.sent !== consumed.received) {
      checks.push(
        `local (${channels} ch): sent ${produced.sent} but received ${consumed.received}`,
      );
    }
    // Whole-run rate: producer and consumer share the thread, so first→last arrival is the run.
    return consumed.received / (produced.elapsedMs / 1000);
  } finally {
    await sluice.close();
  }
}

export async function runCoreBenchmark(args: CoreArgs): Promise<CoreResult> {
  const records = makeKeyedRecords(args.recordSize);
  const network = new NetworkBufferPool(16, SEGMENT);
  const pool = network.createBufferPool(4, 16);
  const checks: string[] = [];
  const result: CoreResult = {
    memcpyBytesPerSecond: [],
    serdeRecordsPerSecond: [],
    keyedSerdeRecordsPerSecond: [],
    localRecordsPerSecond: [],
    localOneChannelRecordsPerSecond: [],
    readers: { allocating: [], reusing: [], view: [] },
    checks,
  };
  // Warm-up of every part, then the measured runs interleaved so drift hits all parts alike.
  memcpyRun(args.warmupMs);
  serdeRun(pool, records, args.recordSize, args.warmupMs, checks);
  keyedSerdeRun(pool, records, args.recordSize, 4, args.warmupMs, checks);
  await localRun(args.recordSize, args.warmupMs, checks, 4);
  await localRun(args.recordSize, args.warmupMs, checks, 1);
  for (const mode of READER_MODES) {
    serdeRun(pool, records, args.recordSize, args.warmupMs, checks, mode);
  }
  for (let run = 0; run < args.runs; run++) {
    result.memcpyBytesPerSecond.push(memcpyRun(args.durationMs));
    result.serdeRecordsPerSecond.push(
      serdeRun(pool, records, args.recordSize, args.durationMs, checks),
    );
    result.keyedSerdeRecordsPerSecond.push(
      keyedSerdeRun(pool, records, args.recordSize, 4, args.durationMs, checks),
    );
    result.localRecordsPerSecond.push(await localRun(args.recordSize, args.durationMs, checks, 4));
    result.localOneChannelRecordsPerSecond.push(
      await localRun(args.recordSize, args.durationMs, checks, 1),
    );
    for (const mode of READER_MODES) {
      result.readers[mode].push(
        serdeRun(pool, records, args.recordSize, args.durationMs, checks, mode),
      );
    }
  }
  pool.destroy();
  if (network.getNumberOfAvailableMemorySegments() !== network.totalNumberOfMemorySegments) {
    checks.push("serde: segments missing from the pool at the end");
  }
  network.destroy();
  return result;
}
