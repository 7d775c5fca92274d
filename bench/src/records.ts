/**
 * The records every system moves, and the Sluice serializers for them. A keyed record is
 * `recordSize` bytes whose first 4 bytes are its key (big-endian int32); the rest is filler. On
 * the wire every system carries a 4-byte length prefix per record (Sluice's record format;
 * hand-built by the raw baselines), so all systems move the same bytes.
 */
import type { DataInputDeserializer, DataOutputSerializer, TypeSerializer } from "@sluice/core";

/** A record as the producer emits it: the key (for routing) and its bytes. */
export interface KeyedRecord {
  readonly key: number;
  readonly bytes: Uint8Array;
}

/** Keys cycle through this many values (a power of two). */
export const KEY_SPACE = 1024;

/**
 * `KEY_SPACE` distinct records of `recordSize` bytes, reused round-robin by producers (as Flink's
 * benchmark reuses one LongValue): generating data is not what is measured.
 */
export function makeKeyedRecords(recordSize: number): KeyedRecord[] {
  const cached = keyedCache.get(recordSize);
  if (cached !== undefined) return cached;
  if (recordSize < 4) throw new Error(`record size must be >= 4, got ${recordSize}`);
  const filler = Buffer.alloc(recordSize);
  for (let i = 4; i < recordSize; i++) filler[i] = (i * 31) & 0xff;
  const records: KeyedRecord[] = [];
  for (let key = 0; key < KEY_SPACE; key++) {
    const bytes = Buffer.from(filler);
    bytes.writeInt32BE(key, 0);
    records.push({ key, bytes });
  }
  keyedCache.set(recordSize, records);
  return records;
}

const keyedCache = new Map<number, KeyedRecord[]>();

interface MutableKeyedRecord {
  key: number;
  readonly bytes: Uint8Array;
}

/** A record for `KeyedRecordSerializer.deserializeInto` to overwrite, record after record. */
export function newReusableKeyedRecord(recordSize: number): KeyedRecord {
  const record: MutableKeyedRecord = { key: 0, bytes: Buffer.alloc(recordSize) };
  return record;
}

/** The same records framed with their 4-byte length prefix (what raw baselines write). */
export function makeFramedRecords(recordSize: number): Buffer[] {
  return makeKeyedRecords(recordSize).map(({ bytes }) => {
    const framed = Buffer.allocUnsafe(4 + bytes.length);
    framed.writeInt32BE(bytes.length, 0);
    framed.set(bytes, 4);
    return framed;
  });
}

/**
 * Writes a keyed record's bytes as its payload; reads back only what a keyed consumer needs, the
 * key (skipping the filler), so no allocation per record happens on either side.
 */
export class KeyedRecordSerializer implements TypeSerializer<KeyedRecord> {
  readonly name: string;

  constructor(readonly recordSize: number) {
    this.name = `keyed-bytes<${recordSize}>`;
  }

  serialize(value: KeyedRecord, out: DataOutputSerializer): void {
    out.writeBytes(value.bytes);
  }

  /** The payload is the record's bytes as they are: the writer appends them from the record. */
  serializeHead(value: KeyedRecord, _out: DataOutputSerializer): Uint8Array {
    return value.bytes;
  }

  /** Allocates per record: a new object and a copy of the bytes (the contract forbids a view). */
  deserialize(input: DataInputDeserializer): KeyedRecord {
    const bytes = Buffer.allocUnsafe(this.recordSize);
    input.readFullyInto(bytes, 0, this.recordSize);
    return { key: bytes.readInt32BE(0), bytes };
  }

  /** Decodes into `reuse` (a record from {@link newReusableKeyedRecord}): no allocation. */
  deserializeInto(reuse: KeyedRecord, input: DataInputDeserializer): KeyedRecord {
    const record = reuse as MutableKeyedRecord;
    input.readFullyInto(record.bytes, 0, this.recordSize);
    const b = record.bytes;
    record.key =
      ((b[0] as number) << 24) |
      ((b[1] as number) << 16) |
      ((b[2] as number) << 8) |
      (b[3] as number);
    return record;
  }
}

/** The reading side of {@link KeyedRecordSerializer}: decodes a record to its key. */
export class KeyReadingSerializer implements TypeSerializer<number> {
  readonly name: string;

  constructor(readonly recordSize: number) {
    this.name = `keyed-bytes-key<${recordSize}>`;
  }

  serialize(_value: number, _out: DataOutputSerializer): void {
    throw new Error("KeyReadingSerializer only reads");
  }

  deserialize(input: DataInputDeserializer): number {
    const key = input.readInt();
    input.skipBytes(this.recordSize - 4);
    return key;
  }
}

/**
 * Parses a stream of length-prefixed records arriving in arbitrary chunks (the raw baselines'
 * receiver): counts records and sums their keys, carrying split records across chunks.
 */
export class FramedRecordParser {
  count = 0;
  keySum = 0;
  bytes = 0;
  private readonly header = Buffer.alloc(4);
  private headerFill = 0;
  /** Payload bytes still to skip of the current record (after its key was read). */
  private remaining = 0;
  /** Key bytes of the current record gathered so far (a key may be split too). */
  private readonly keyBytes = Buffer.alloc(4);
  private keyFill = 0;
  private inPayload = false;

  push(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    const buf = chunk;
    let pos = 0;
    const end = buf.length;
    while (pos < end) {
      if (!this.inPayload) {
        if (this.headerFill === 0 && end - pos >= 8) {
          // Fast path: length and key in this chunk.
          const length =
            ((buf[pos] as number) << 24) |
            ((buf[pos + 1] as number) << 16) |
            ((buf[pos + 2] as number) << 8) |
            (buf[pos + 3] as number);
          const key =
            ((buf[pos + 4] as number) << 24) |
            ((buf[pos + 5] as number) << 16) |
            ((buf[pos + 6] as number) << 8) |
            (buf[pos + 7] as number);
          pos += 8;
          const rest = length - 4;
          if (end - pos >= rest) {
            pos += rest;
            this.count++;
            this.keySum = (this.keySum + key) | 0;
            continue;
          }
          this.remaining = rest - (end - pos);
          this.keySum = (this.keySum + key) | 0;
          this.keyFill = 4;
          this.inPayload = true;
          pos = end;
          continue;
        }
        this.header[this.headerFill++] = buf[pos++] as number;
        if (this.headerFill === 4) {
          this.headerFill = 0;
          this.remaining = this.header.readInt32BE(0);
          this.keyFill = 0;
          this.inPayload = true;
        }
        continue;
      }
      if (this.keyFill < 4) {
        this.keyBytes[this.keyFill++] = buf[pos++] as number;
        this.remaining--;
        if (this.keyFill === 4) this.keySum = (this.keySum + this.keyBytes.readInt32BE(0)) | 0;
        if (this.remaining === 0) this.finishRecord();
        continue;
      }
      const take = Math.min(this.remaining, end - pos);
      pos += take;
      this.remaining -= take;
      if (this.remaining === 0) this.finishRecord();
    }
  }

  private finishRecord(): void {
    this.inPayload = false;
    this.count++;
  }
}
