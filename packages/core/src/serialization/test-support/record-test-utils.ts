import type { LocalBufferPool } from "../../memory/local-buffer-pool.js";
import type { NetworkBuffer } from "../../memory/network-buffer.js";
import { DataOutputSerializer } from "../data-output-serializer.js";
import { serializeRecord } from "../record-serializer.js";
import type {
  RecordHolder,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "../spilling-adaptive-spanning-record-deserializer.js";
import type { TypeSerializer } from "../type-serializer.js";

/** Deterministic pseudo-random bytes (xorshift32): large test records without fast-check cost. */
export function patternBytes(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let x = seed | 0 || 0x9e3779b9;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    bytes[i] = x;
  }
  return bytes;
}

/** The framed bytes (length prefix + payload) of every value, concatenated. */
export function frameAll<T>(values: readonly T[], serializer: TypeSerializer<T>): Uint8Array {
  const out = new DataOutputSerializer();
  const parts = values.map((value) => Uint8Array.from(serializeRecord(value, serializer, out)));
  return Buffer.concat(parts);
}

/** A pooled buffer holding a copy of `bytes` (must fit one segment). */
export function pooledBufferOf(pool: LocalBufferPool, bytes: Uint8Array): NetworkBuffer {
  const buffer = pool.requestBuffer();
  if (buffer === undefined) throw new Error("test pool ran out of buffers");
  buffer.writableView().set(bytes);
  buffer.setSize(bytes.length);
  return buffer;
}

/**
 * Splits `buffer` at the given cut offsets into retained read-only slices and drops the
 * original's reference: every slice then owns one reference, as a network buffer would.
 */
export function splitBuffer(buffer: NetworkBuffer, cuts: readonly number[]): NetworkBuffer[] {
  const size = buffer.readableBytes();
  const points = [...new Set(cuts.map((c) => Math.min(Math.max(c, 0), size)))].sort(
    (a, b) => a - b,
  );
  const slices: NetworkBuffer[] = [];
  let start = 0;
  for (const point of [...points, size]) {
    if (point < start) continue;
    slices.push(
      buffer.readOnlySlice(buffer.getReaderIndex() + start, point - start).retainBuffer(),
    );
    start = point;
  }
  buffer.recycleBuffer();
  return slices;
}

/** Feeds one buffer and collects every record it completes. */
export function feedAndCollect<T>(
  deserializer: SpillingAdaptiveSpanningRecordDeserializer,
  buffer: NetworkBuffer,
  serializer: TypeSerializer<T>,
  into: T[],
): void {
  const holder: RecordHolder<T> = { value: undefined };
  deserializer.setNextBuffer(buffer);
  for (;;) {
    const result = deserializer.getNextRecord(serializer, holder);
    if (result.isFullRecord()) into.push(holder.value as T);
    if (result.isBufferConsumed()) return;
  }
}

/** Like `feedAndCollect`, through `getNextRecordBytes` (the views are copied). */
export function feedAndCollectBytes(
  deserializer: SpillingAdaptiveSpanningRecordDeserializer,
  buffer: NetworkBuffer,
  into: Uint8Array[],
): void {
  const holder: RecordHolder<Uint8Array> = { value: undefined };
  deserializer.setNextBuffer(buffer);
  for (;;) {
    const result = deserializer.getNextRecordBytes(holder);
    if (result.isFullRecord()) into.push(Uint8Array.from(holder.value as Uint8Array));
    if (result.isBufferConsumed()) return;
  }
}
