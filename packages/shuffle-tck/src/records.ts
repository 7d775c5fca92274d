import {
  type NetworkBuffer,
  type RecordHolder,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "@sluice/core";

/** Bytes of the record header: producer index, target subpartition, sequence number (int32 each). */
export const RECORD_HEADER_BYTES = 12;

/**
 * A test record: who wrote it, for which subpartition, its sequence number on that
 * (producer, subpartition) pair, and `padding` bytes derived from the sequence number, so
 * corruption, loss, duplication and reordering are all detectable.
 */
export function encodeRecord(
  producer: number,
  target: number,
  seq: number,
  padding: number,
): Buffer {
  const record = Buffer.allocUnsafe(RECORD_HEADER_BYTES + padding);
  record.writeInt32BE(producer, 0);
  record.writeInt32BE(target, 4);
  record.writeInt32BE(seq, 8);
  for (let i = 0; i < padding; i++) record[RECORD_HEADER_BYTES + i] = (seq * 31 + i) & 0xff;
  return record;
}

/**
 * Checks the records one gate receives: per channel, sequence numbers must be 0, 1, 2, … with
 * intact padding, and the target must be this gate's subpartition.
 */
export class RecordChecker {
  readonly counts: number[];
  readonly violations: string[] = [];
  private readonly nextSeq = new Map<string, number>();
  private readonly deserializers: SpillingAdaptiveSpanningRecordDeserializer[];
  private readonly holder: RecordHolder<Uint8Array> = { value: undefined };

  constructor(
    numberOfChannels: number,
    private readonly subpartition: number,
  ) {
    this.counts = new Array<number>(numberOfChannels).fill(0);
    this.deserializers = Array.from(
      { length: numberOfChannels },
      () => new SpillingAdaptiveSpanningRecordDeserializer(),
    );
  }

  /** Consumes one data buffer of `channel` (takes ownership of it). */
  accept(channel: number, buffer: NetworkBuffer): void {
    const deserializer = this.deserializers[channel];
    if (deserializer === undefined) {
      buffer.recycleBuffer();
      this.violation(`buffer for unknown channel ${channel}`);
      return;
    }
    deserializer.setNextBuffer(buffer);
    for (;;) {
      const result = deserializer.getNextRecordBytes(this.holder);
      if (result.isFullRecord()) this.check(channel, this.holder.value as Uint8Array);
      if (result.isBufferConsumed()) return;
    }
  }

  private check(channel: number, bytes: Uint8Array): void {
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const producer = view.readInt32BE(0);
    const target = view.readInt32BE(4);
    const seq = view.readInt32BE(8);
    if (target !== this.subpartition) {
      this.violation(
        `channel ${channel}: record for subpartition ${target} reached ${this.subpartition}`,
      );
    }
    const key = `${channel}/${producer}`;
    const expected = this.nextSeq.get(key) ?? 0;
    if (seq !== expected) {
      this.violation(
        `channel ${channel}, producer ${producer}: expected seq ${expected}, got ${seq}`,
      );
    }
    for (let i = RECORD_HEADER_BYTES; i < view.length; i++) {
      if (view[i] !== ((seq * 31 + i - RECORD_HEADER_BYTES) & 0xff)) {
        this.violation(`channel ${channel}, seq ${seq}: corrupt byte ${i}`);
        break;
      }
    }
    this.nextSeq.set(key, seq + 1);
    this.counts[channel] = (this.counts[channel] ?? 0) + 1;
  }

  private violation(text: string): void {
    if (this.violations.length < 20) this.violations.push(text);
  }

  /** True when a channel stopped in the middle of a record. */
  hasUnfinishedData(): boolean {
    return this.deserializers.some((d) => d.hasUnfinishedData());
  }

  close(): void {
    for (const d of this.deserializers) d.clear();
  }
}
