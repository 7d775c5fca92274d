/**
 * Case 13's tasks, as a job module: a task manager whose slots run on threads loads its code by
 * reference in every slot thread, and the single-loop task manager it is compared with loads the
 * same module, so both run the same code.
 *
 * - `keyed-source` → HASH → `keyed-count`: 100-byte records, each keyed by its first 4 bytes,
 *   written with the task's RecordWriter and read with its RecordReader (serialized, hashed,
 *   framed, deserialized: the per-record work that one core does for all four tasks of the
 *   single-loop task manager, and each slot thread for its own two).
 * - `segment-source` → `segment-sink`: the local channel alone. The source writes records of one
 *   segment each straight into its partition (one copy, into the segment, as a ring writer
 *   copies into its ring) and the sink copies each buffer's bytes out of the gate (one copy, as a
 *   ring reader copies out of its ring): what moves them is the partition, the cross-thread queue
 *   and the gate.
 */
import { PollStatus, type RecordReader, type Task } from "@sluice/runtime";

/** Bytes of a keyed record. */
export const KEYED_RECORD_BYTES = 100;

/** What a sink or counter reports: what it read, and when the first and the last arrived. */
export type ArrivalReport = {
  readonly records: number;
  readonly bytes: number;
  /** `performance.timeOrigin + performance.now()` of the first arrival (comparable across threads). */
  readonly first: number;
  readonly last: number;
};

const now = () => performance.timeOrigin + performance.now();
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** The key of a keyed record: its first 4 bytes, big-endian. */
function keyOf(record: Uint8Array): number {
  return (
    ((record[0] as number) << 24) |
    ((record[1] as number) << 16) |
    ((record[2] as number) << 8) |
    (record[3] as number)
  );
}

/** Emits `records` keyed records (a key per record, spread over every consumer). */
async function keyedSource(task: Task): Promise<number> {
  const writer = task.writer<Uint8Array>();
  const records = task.configuration.records as number;
  const record = new Uint8Array(KEYED_RECORD_BYTES).fill(task.subtaskIndex + 1);
  for (let i = 0; i < records; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    const key = i * 2 + task.subtaskIndex;
    record[0] = key >>> 24;
    record[1] = key >>> 16;
    record[2] = key >>> 8;
    record[3] = key;
    writer.emit(record);
    if ((i & 1023) === 1023) await turn();
  }
  return records;
}

/** Reads every record (a copy of its bytes each) and sums a byte of each; reports the arrivals. */
async function keyedCount(task: Task): Promise<ArrivalReport> {
  const reader = task.reader<Uint8Array>() as RecordReader<Uint8Array>;
  let records = 0;
  let checksum = 0;
  let first = 0;
  let last = 0;
  const accept = (record: Uint8Array) => {
    records++;
    checksum += record[3] as number;
  };
  for (;;) {
    const before = records;
    const status = reader.pollRecords(accept, 512);
    if (records > before) {
      last = now();
      if (before === 0) first = last;
    }
    if (status === PollStatus.END_OF_INPUT) break;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await turn();
  }
  return { records, bytes: checksum, first, last };
}

/** Writes `records` records of one segment each (framed) straight into partition 0. */
async function segmentSource(task: Task): Promise<number> {
  const partition = task.partitions[0];
  if (partition === undefined) throw new Error(`${task.name} has no partition`);
  const segmentSize = task.configuration.segmentSize as number;
  const records = task.configuration.records as number;
  const frame = Buffer.alloc(segmentSize, 0x5a);
  frame.writeInt32BE(segmentSize - 4, 0);
  for (let i = 0; i < records; i++) {
    if (!partition.isAvailable()) await partition.getAvailableFuture();
    frame.writeInt32BE(i, 4);
    partition.emitRecord(frame, 0);
    if ((i & 15) === 15) await turn();
  }
  partition.flushAll();
  return records;
}

/** Copies every data buffer of gate 0 out (as a ring reader copies out of its ring). */
async function segmentSink(task: Task): Promise<ArrivalReport> {
  const gate = task.gates[0];
  if (gate === undefined) throw new Error(`${task.name} has no gate`);
  const scratch = Buffer.alloc(task.configuration.segmentSize as number);
  let records = 0;
  let bytes = 0;
  let first = 0;
  let last = 0;
  for (;;) {
    const next = gate.pollNext();
    if (next === undefined) {
      if (gate.isFinished()) break;
      await gate.getAvailableFuture();
      continue;
    }
    const buffer = next.buffer;
    if (buffer === undefined) continue;
    const view = buffer.readableView();
    scratch.set(view);
    bytes += view.length;
    records++;
    buffer.recycleBuffer();
    last = now();
    if (records === 1) first = last;
    if ((records & 15) === 15) await turn();
  }
  return { records, bytes, first, last };
}

/** The job module. */
export default {
  userCode: {
    invokables: {
      "keyed-source": keyedSource,
      "keyed-count": keyedCount,
      "segment-source": segmentSource,
      "segment-sink": segmentSink,
    },
    keySelectors: { "first-int": keyOf },
  },
};
