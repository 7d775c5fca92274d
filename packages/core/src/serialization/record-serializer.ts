import { IllegalArgumentError, RecordTooLargeError } from "../errors.js";
import type { DataOutputSerializer } from "./data-output-serializer.js";
import type { TypeSerializer } from "./type-serializer.js";

/** The configuration key of the maximum record size, named in {@link RecordTooLargeError}s. */
export const MAX_RECORD_SIZE_KEY = "taskmanager.network.max-record-size";

/**
 * The default maximum record size: 2³¹ − 1 bytes, the largest payload the int32 length prefix
 * can describe (Flink itself has no lower limit). Lower it to fail fast on runaway records;
 * memory stays bounded either way, because the deserializer spills large records to disk.
 */
export const DEFAULT_MAX_RECORD_SIZE = 0x7fff_ffff;

/** Bytes of the big-endian int32 length in front of every record. */
export const RECORD_LENGTH_BYTES = 4;

/** Checks a max-record-size option; shared by the writer and the reader. */
export function checkMaxRecordSize(maxRecordSize: number): number {
  if (
    !Number.isInteger(maxRecordSize) ||
    maxRecordSize < 0 ||
    maxRecordSize > DEFAULT_MAX_RECORD_SIZE
  ) {
    throw new IllegalArgumentError(
      `'${MAX_RECORD_SIZE_KEY}' must be an integer in [0, ${DEFAULT_MAX_RECORD_SIZE}], got ${maxRecordSize}`,
    );
  }
  return maxRecordSize;
}

/**
 * Frames one record in Flink's format: a big-endian int32 payload length (the 4
 * length bytes excluded), then the payload `serializer` writes. `out` is cleared first; the
 * length is reserved and patched afterwards, so the value is serialized once, with no copy.
 * The task's RecordWriter frames every record this way before it hands the bytes to the
 * partition, which copies them into its buffers as they are.
 *
 * Returns a view of `out`'s buffer holding the framed record: valid until `out` is used again.
 * The frame may be split across any number of buffers; the reader's deserializer decodes it.
 *
 * @throws RecordTooLargeError when the payload exceeds `maxRecordSize` (naming the size, the
 *   limit and {@link MAX_RECORD_SIZE_KEY}).
 */
export function serializeRecord<T>(
  value: T,
  serializer: TypeSerializer<T>,
  out: DataOutputSerializer,
  maxRecordSize: number = DEFAULT_MAX_RECORD_SIZE,
): Buffer {
  if (maxRecordSize !== DEFAULT_MAX_RECORD_SIZE) checkMaxRecordSize(maxRecordSize);
  out.clear();
  // This runs once per record of every task: the length is reserved and patched with plain byte
  // stores, not with the argument-checking skipBytesToWrite/writeIntAt (12 B records lost a fifth
  // of their rate to those checks).
  out.writeInt(0);
  serializer.serialize(value, out);
  const payloadLength = out.length - RECORD_LENGTH_BYTES;
  if (payloadLength > maxRecordSize) throwRecordTooLarge(payloadLength, serializer, maxRecordSize);
  const framed = out.getSharedBuffer();
  framed[0] = payloadLength >>> 24;
  framed[1] = payloadLength >>> 16;
  framed[2] = payloadLength >>> 8;
  framed[3] = payloadLength;
  return framed;
}

/**
 * Tails shorter than this are copied into the output after all (see {@link serializeRecordHead}):
 * below it, the copy costs less than appending a record to the network buffers in two parts.
 */
export const MIN_TAIL_BYTES = 1024;

const NO_TAIL = new Uint8Array(0);

/**
 * Frames one record as {@link serializeRecord} does, for a serializer with `serializeHead`: the
 * length and what the serializer writes go into `out`, and the trailing bytes the value already
 * holds are returned rather than copied, so the caller appends them to its buffers straight from
 * the value. The framed record is `out.getSharedBuffer()` followed by the returned bytes (its
 * length counts both); a tail shorter than {@link MIN_TAIL_BYTES} is copied into `out` and an
 * empty array returned, leaving the whole record in `out`.
 *
 * @throws RecordTooLargeError when the payload exceeds `maxRecordSize`.
 */
export function serializeRecordHead<T>(
  value: T,
  serializer: TypeSerializer<T> & Required<Pick<TypeSerializer<T>, "serializeHead">>,
  out: DataOutputSerializer,
  maxRecordSize: number = DEFAULT_MAX_RECORD_SIZE,
): Uint8Array {
  if (maxRecordSize !== DEFAULT_MAX_RECORD_SIZE) checkMaxRecordSize(maxRecordSize);
  out.clear();
  out.writeInt(0);
  let tail = serializer.serializeHead(value, out);
  if (tail.length < MIN_TAIL_BYTES) {
    if (tail.length > 0) out.writeBytes(tail);
    tail = NO_TAIL;
  }
  const payloadLength = out.length - RECORD_LENGTH_BYTES + tail.length;
  if (payloadLength > maxRecordSize) throwRecordTooLarge(payloadLength, serializer, maxRecordSize);
  const head = out.getSharedBuffer();
  head[0] = payloadLength >>> 24;
  head[1] = payloadLength >>> 16;
  head[2] = payloadLength >>> 8;
  head[3] = payloadLength;
  return tail;
}

/**
 * Out of line: the message's template would otherwise count towards {@link serializeRecord}'s
 * bytecode size, and V8 stops inlining the writer's per-record calls once the inlined total
 * exceeds its budget.
 */
function throwRecordTooLarge(
  payloadLength: number,
  serializer: TypeSerializer<unknown>,
  maxRecordSize: number,
): never {
  throw new RecordTooLargeError(
    `record of ${payloadLength} bytes (serializer '${serializer.name}') exceeds the maximum ` +
      `record size of ${maxRecordSize} bytes; raise '${MAX_RECORD_SIZE_KEY}'`,
  );
}

/**
 * Frames bytes that are already serialized: a new array holding the big-endian int32 length of
 * `payload`, then a copy of `payload`. For code that has the payload's bytes rather than a value
 * and a serializer (tests, tools); the task's writer uses {@link serializeRecord}, which frames
 * without the copy.
 */
export function frameRecord(payload: Uint8Array): Buffer {
  const framed = Buffer.allocUnsafe(RECORD_LENGTH_BYTES + payload.length);
  framed.writeInt32BE(payload.length, 0);
  framed.set(payload, RECORD_LENGTH_BYTES);
  return framed;
}
