/**
 * A fixed amount of Sluice's per-record work on one thread, synchronously: records through a
 * RecordWriter into a PipelinedResultPartition of `channels` subpartitions (32 KiB segments), read
 * back through one record deserializer per subpartition; whenever the writer turns unavailable,
 * every subpartition's finished buffers are read and recycled. No event loop turn, no task, no
 * timer: the writer's and the partition's work per record, and the reader's, nothing else. Every
 * record is checked (count and key sum), and every segment must be back in the pool at the end.
 *
 * `fixed-work.js partition` runs it for instruction counts; case 13 runs it on one and on two
 * threads at once for the machine's scaling of this work (`partition-work-thread.ts`).
 */
import {
  BytesSerializer,
  DataOutputSerializer,
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
} from "../records.js";

export interface PartitionWorkArgs {
  readonly records: number;
  /** Bytes per record. */
  readonly size: number;
  readonly channels: number;
  /** `rebalance`, or keyed (HASH) otherwise. */
  readonly selector?: string;
  /** 12-byte int64 records. */
  readonly int64?: boolean;
  /**
   * The segments are those of a `SharedNetworkMemory` (a `SharedArrayBuffer`, as the network
   * memory of a task manager whose slots run on threads).
   */
  readonly shared?: boolean;
  /** `Uint8Array` records through the `bytes` serializer, each read back as a copy (case 13's records). */
  readonly bytes?: boolean;
  /**
   * `false`: the finished buffers are recycled unread, so the run is the producer's work alone
   * (case 1's bound); the check then counts their bytes instead of their records.
   */
  readonly read?: boolean;
}

/** Runs the work; returns how long it took (ms). */
export async function partitionWork(args: PartitionWorkArgs): Promise<number> {
  const started = performance.now();
  const { records, size, channels } = args;
  const int64 = args.int64 === true;
  const segmentSize = 32 * 1024;
  const segments = Math.max(64, 4 * channels + 16);
  const global =
    args.shared === true
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
  const bytes = args.bytes === true;
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
    args.selector === "rebalance" ? "REBALANCE" : "HASH",
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
  const read = args.read !== false;
  let received = 0;
  let keySum = 0;
  let unreadBytes = 0;
  const drain = () => {
    views.forEach((view, i) => {
      const deserializer = deserializers[i] as SpillingAdaptiveSpanningRecordDeserializer;
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        const { buffer } = next;
        if (!buffer.isBuffer() || !read) {
          if (buffer.isBuffer()) unreadBytes += buffer.getSize();
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
  if (!read) {
    // Every record framed: its 4-byte length and its serialized bytes.
    const out = new DataOutputSerializer({ initialCapacity: 256 });
    serializer.serialize(int64 ? 7n : bytes ? record : keyed[0], out);
    const expectedBytes = records * (4 + out.length);
    if (unreadBytes !== expectedBytes) {
      throw new Error(
        `wrote ${records} records but the buffers held ${unreadBytes} bytes, not ${expectedBytes}`,
      );
    }
  } else if (received !== records || keySum !== expectedKeySum) {
    throw new Error(
      `wrote ${records} records (key sum ${expectedKeySum}) but read ${received} (key sum ${keySum})`,
    );
  }
  if (global.getNumberOfAvailableMemorySegments() !== global.totalNumberOfMemorySegments) {
    throw new Error("segments missing from the pool at the end");
  }
  global.destroy();
  return performance.now() - started;
}
