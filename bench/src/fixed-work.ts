/**
 * Fixed amounts of work for instruction counts: each command moves a given number of records
 * through one Sluice path in this one process and exits, so that `valgrind --tool=callgrind` (or
 * `perf stat -e instructions`, where the machine supports it) counts the same work however loaded
 * the machine is. The difference between two record counts, divided by the difference in records,
 * is the path's instructions per record; two builds compared that way give an A/B that the load
 * of a shared machine does not move (see "How to run" in docs/benchmarks.md).
 *
 * ```sh
 * node bench/dist/fixed-work.js exchange --records 200000 --size 100 --channels 4 --selector keyed
 * valgrind --tool=callgrind --callgrind-out-file=/dev/null \
 *   node --single-threaded bench/dist/fixed-work.js exchange --records 200000 --size 32768
 * ```
 *
 * `exchange`: one producer task and one consumer task on one TaskExecutor of the in-process
 * (local) plugin, records of `--size` bytes (the bench's keyed records) over `--channels`
 * subpartitions, keyed or round-robin, or 12-byte int64 records with `--int64`; the buffer timeout
 * is disabled, so only full buffers and the end of the data flush, and no timer makes two runs
 * differ. Every record is checked (count and key sum).
 *
 * `partition`: the same records through a RecordWriter into a PipelinedResultPartition of
 * `--channels` subpartitions (32 KiB segments), read back through one record deserializer per
 * subpartition, all synchronous on one stack: whenever the writer turns unavailable, every
 * subpartition's finished buffers are read and recycled. No event loop, no task, no timer: the
 * writer's and the partition's work per record, and the reader's, nothing else. With `--shared`
 * the segments are those of a `SharedNetworkMemory` (a `SharedArrayBuffer`, as the network memory
 * of a task manager whose slots run on threads); with `--bytes` the records are `Uint8Array`s of
 * `--size` bytes through the `bytes` serializer, each read back as a copy (case 13's records).
 */
import { parseArgs } from "node:util";
import {
  BytesSerializer,
  Int64Serializer,
  NetworkBufferPool,
  type RecordHolder,
  SharedNetworkMemory,
  SpillingAdaptiveSpanningRecordDeserializer,
  type TypeSerializer,
} from "@sluice/core";
import { ResultPartitionManager, type ResultSubpartitionView } from "@sluice/network/plugin";
import { buildPipelinedResultPartition } from "@sluice/network/testing";
import { createChannelSelector, createRecordWriter } from "@sluice/runtime/plugin";
import {
  type KeyedRecord,
  KeyedRecordSerializer,
  KeyReadingSerializer,
  makeKeyedRecords,
} from "./records.js";
import { runConsumerLoop, runTask, SluiceProcess, yieldToEventLoop } from "./systems/sluice.js";
import { benchCode, exchangeOf } from "./systems/sluice-roles.js";

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    records: { type: "string", default: "100000" },
    size: { type: "string", default: "100" },
    channels: { type: "string", default: "4" },
    selector: { type: "string", default: "keyed" },
    int64: { type: "boolean", default: false },
    shared: { type: "boolean", default: false },
    bytes: { type: "boolean", default: false },
    batch: { type: "string", default: "1024" },
  },
});

async function exchange(): Promise<void> {
  const records = Number(values.records);
  const size = Number(values.size);
  const channels = Number(values.channels);
  const selector = values.selector === "rebalance" ? "rebalance" : "keyed";
  const int64 = values.int64 === true;
  const batch = Number(values.batch);
  const sluice = await SluiceProcess.start(
    "local",
    { "execution.buffer-timeout.enabled": false },
    benchCode(size),
  );
  try {
    const spec = exchangeOf({ channels, selector, recordKind: int64 ? "int64" : "keyed" });
    const deployed = await sluice.deployExchange(spec);
    const consumer = await sluice.executor.deployTask(deployed.consumer);
    const keyed = makeKeyedRecords(Math.max(size, 4));
    const mask = keyed.length - 1;
    let keySum = 0;
    const [sent, received] = await Promise.all([
      runTask(deployed.producer, async (task) => {
        const writer = task.writer<KeyedRecord | bigint>();
        for (let i = 0; i < records; ) {
          const end = Math.min(records, i + batch);
          for (; i < end; i++) {
            if (!writer.isAvailable()) await writer.getAvailableFuture();
            writer.emit(int64 ? 7n : (keyed[i & mask] as KeyedRecord));
          }
          await yieldToEventLoop();
        }
        return records;
      }),
      runTask(consumer, (task) =>
        runConsumerLoop(
          task.reader<number | bigint>(),
          (record) => {
            if (typeof record === "number") keySum = (keySum + record) | 0;
          },
          4096,
        ),
      ),
    ]);
    await deployed.retire();
    let expectedKeySum = 0;
    for (let i = 0; !int64 && i < records; i++) expectedKeySum = (expectedKeySum + (i & mask)) | 0;
    if (received.received !== sent || keySum !== expectedKeySum) {
      throw new Error(
        `sent ${sent} records (key sum ${expectedKeySum}) but received ${received.received} (key sum ${keySum})`,
      );
    }
    console.log(`exchange: ${sent} records of ${int64 ? "int64" : `${size} B`} verified`);
  } finally {
    await sluice.close();
  }
}

async function partition(): Promise<void> {
  const records = Number(values.records);
  const size = Number(values.size);
  const channels = Number(values.channels);
  const int64 = values.int64 === true;
  const segmentSize = 32 * 1024;
  const segments = Math.max(64, 4 * channels + 16);
  const global =
    values.shared === true
      ? new NetworkBufferPool(SharedNetworkMemory.create(segments, segmentSize, 1))
      : new NetworkBufferPool(segments, segmentSize);
  const manager = new ResultPartitionManager();
  const target = buildPipelinedResultPartition({
    networkBufferPool: global,
    partitionManager: manager,
    numberOfSubpartitions: channels,
    requiredBuffers: channels + 1,
    maxBuffers: 2 * channels + 8,
  });
  const views: ResultSubpartitionView[] = [];
  for (let i = 0; i < channels; i++) {
    views.push(
      manager.createSubpartitionView(target.partitionId, i, { notifyDataAvailable: () => {} }),
    );
  }
  const bytes = values.bytes === true;
  const keyed = makeKeyedRecords(Math.max(size, 4));
  const mask = keyed.length - 1;
  const serializer = (
    int64
      ? Int64Serializer.INSTANCE
      : bytes
        ? BytesSerializer.INSTANCE
        : new KeyedRecordSerializer(size)
  ) as TypeSerializer<unknown>;
  const reading = (
    int64 || bytes ? serializer : new KeyReadingSerializer(size)
  ) as TypeSerializer<unknown>;
  /** A `--bytes` record's key: its first 4 bytes, as case 13's. */
  const keyOfBytes = (record: Uint8Array) =>
    ((record[0] as number) << 24) |
    ((record[1] as number) << 16) |
    ((record[2] as number) << 8) |
    (record[3] as number);
  const selector = createChannelSelector<unknown>(
    values.selector === "rebalance" ? "REBALANCE" : "HASH",
    {
      keySelector: (record) =>
        bytes ? keyOfBytes(record as Uint8Array) : (record as KeyedRecord).key,
      maxParallelism: 128,
    },
  );
  const record = new Uint8Array(size);
  const writer = createRecordWriter(target, serializer, selector, {
    taskName: "fixed work",
    bufferTimeout: { kind: "disabled" },
  });
  const deserializers = views.map(() => new SpillingAdaptiveSpanningRecordDeserializer());
  const holder: RecordHolder<unknown> = { value: undefined };
  let received = 0;
  let keySum = 0;
  const drain = () => {
    views.forEach((view, i) => {
      const deserializer = deserializers[i] as SpillingAdaptiveSpanningRecordDeserializer;
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        const { buffer } = next;
        if (!buffer.isBuffer()) {
          buffer.recycleBuffer();
          continue;
        }
        deserializer.setNextBuffer(buffer);
        for (;;) {
          const result = deserializer.getNextRecord(reading, holder);
          if (result.isFullRecord()) {
            received++;
            if (bytes) keySum = (keySum + keyOfBytes(holder.value as Uint8Array)) | 0;
            else if (!int64) keySum = (keySum + (holder.value as number)) | 0;
          }
          if (result.isBufferConsumed()) break;
        }
      }
    });
  };
  for (let i = 0; i < records; i++) {
    if (!writer.isAvailable()) {
      drain();
      await writer.getAvailableFuture();
    }
    if (bytes) {
      const key = i & mask;
      record[2] = key >>> 8;
      record[3] = key;
      writer.emit(record);
    } else {
      writer.emit(int64 ? 7n : keyed[i & mask]);
    }
  }
  target.finish();
  drain();
  writer.close();
  for (const view of views) view.releaseAllResources();
  target.close();
  target.release();
  for (const deserializer of deserializers) deserializer.clear();
  let expectedKeySum = 0;
  for (let i = 0; !int64 && i < records; i++) expectedKeySum = (expectedKeySum + (i & mask)) | 0;
  if (received !== records || keySum !== expectedKeySum) {
    throw new Error(
      `wrote ${records} records (key sum ${expectedKeySum}) but read ${received} (key sum ${keySum})`,
    );
  }
  if (global.getNumberOfAvailableMemorySegments() !== global.totalNumberOfMemorySegments) {
    throw new Error("segments missing from the pool at the end");
  }
  global.destroy();
  console.log(`partition: ${records} records of ${int64 ? "int64" : `${size} B`} verified`);
}

const commands: Record<string, () => Promise<void>> = { exchange, partition };
const command = commands[positionals[0] ?? ""];
if (command === undefined) {
  console.error(`usage: fixed-work.js <${Object.keys(commands).join("|")}> [options]`);
  process.exit(2);
}
await command();
