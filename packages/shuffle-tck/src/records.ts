import type { DataInputDeserializer, DataOutputSerializer, TypeSerializer } from "@sluice/core";
import { assignKeyToParallelOperator } from "@sluice/runtime";

/**
 * The one record format of the conformance kit: who wrote it, for which consumer subtask, its
 * sequence number on that (producer, consumer) pair, its key, and `padding` bytes derived from the
 * sequence number, so that loss, duplication, reordering, misrouting and corruption are all
 * detectable by {@link RecordChecker}.
 */
export interface TckRecord {
  /** The producer subtask that wrote it. */
  readonly producer: number;
  /** The consumer subtask its key belongs to. */
  readonly target: number;
  /** 0, 1, 2, … per (producer, target). */
  readonly seq: number;
  /** The routing key (HASH partitioning reads it with the `tck-key` key selector). */
  readonly key: string;
  /** Filler bytes after the header. */
  readonly padding: number;
  /** False when a padding byte differs from what the producer wrote (set when read). */
  readonly intact?: boolean;
}

/** The byte of padding position `i` of record `seq`. */
function paddingByte(seq: number, i: number): number {
  return (seq * 31 + i) & 0xff;
}

/** Serializer of {@link TckRecord}, registered with the TaskExecutor as `tck-record`. */
export class TckRecordSerializer implements TypeSerializer<TckRecord> {
  /** The shared instance. */
  static readonly INSTANCE = new TckRecordSerializer();
  readonly name = "tck-record";
  private scratch = new Uint8Array(0);

  serialize(record: TckRecord, out: DataOutputSerializer): void {
    out.writeInt(record.producer);
    out.writeInt(record.target);
    out.writeInt(record.seq);
    out.writeString(record.key);
    out.writeInt(record.padding);
    if (this.scratch.length < record.padding) this.scratch = new Uint8Array(record.padding);
    const bytes = this.scratch;
    for (let i = 0; i < record.padding; i++) bytes[i] = paddingByte(record.seq, i);
    out.writeBytes(bytes, 0, record.padding);
  }

  deserialize(input: DataInputDeserializer): TckRecord {
    const producer = input.readInt();
    const target = input.readInt();
    const seq = input.readInt();
    const key = input.readString();
    const padding = input.readInt();
    const bytes = input.readFully(padding);
    let intact = true;
    for (let i = 0; i < padding; i++) {
      if (bytes[i] !== paddingByte(seq, i)) {
        intact = false;
        break;
      }
    }
    return { producer, target, seq, key, padding, intact };
  }
}

/** The key selector of {@link TckRecord}s, registered as `tck-key`. */
export const tckKey = (record: TckRecord): string => record.key;

/**
 * Writes the records of one producer subtask: keys are spread over `consumers` consumer subtasks
 * by Flink's key-group assignment, and each record carries its per-consumer sequence number.
 */
export class TckRecordSource {
  private readonly seqs: number[];

  constructor(
    readonly producer: number,
    readonly consumers: number,
    readonly maxParallelism: number,
    readonly padding: number,
  ) {
    this.seqs = new Array<number>(consumers).fill(0);
  }

  /** Record number `i` of this producer. */
  next(i: number): TckRecord {
    const key = `key-${this.producer}-${i}`;
    const target = assignKeyToParallelOperator(key, this.maxParallelism, this.consumers);
    const seq = this.seqs[target] as number;
    this.seqs[target] = seq + 1;
    return { producer: this.producer, target, seq, key, padding: this.padding };
  }
}

/**
 * Checks what one consumer subtask received: per producer, sequence numbers 0, 1, 2, … with
 * intact padding, each record meant for this subtask. Keeps at most 20 violations.
 */
export class RecordChecker {
  /** Records received per producer subtask. */
  readonly counts: number[];
  /** What went wrong, in words (empty when every record was right). */
  readonly violations: string[] = [];
  private readonly nextSeq: number[];

  constructor(
    producers: number,
    private readonly subtask: number,
  ) {
    this.counts = new Array<number>(producers).fill(0);
    this.nextSeq = new Array<number>(producers).fill(0);
  }

  /** Records received in all. */
  get total(): number {
    return this.counts.reduce((sum, n) => sum + n, 0);
  }

  /** Checks one record. */
  accept(record: TckRecord): void {
    const { producer, target, seq } = record;
    if (target !== this.subtask) {
      this.violation(`record ${producer}/${seq} for subtask ${target} reached ${this.subtask}`);
    }
    const expected = this.nextSeq[producer];
    if (expected === undefined) {
      this.violation(`record of unknown producer ${producer}`);
      return;
    }
    if (seq !== expected) {
      this.violation(`producer ${producer}: expected seq ${expected}, got ${seq}`);
    }
    if (record.intact === false)
      this.violation(`producer ${producer}, seq ${seq}: corrupt padding`);
    this.nextSeq[producer] = seq + 1;
    this.counts[producer] = (this.counts[producer] as number) + 1;
  }

  private violation(text: string): void {
    if (this.violations.length < 20) this.violations.push(text);
  }
}
