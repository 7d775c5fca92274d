import { ProtocolError, ResultPartitionID } from "@sluice/core";
import * as z from "zod";

/**
 * The message types of the remote shuffle's own protocol, spoken between shuffle workers, the
 * shuffle manager (in the job manager's ShuffleMaster), producers and consumers. Data reads do
 * not use it: consumers read stored partitions with the network shuffle's credit-based protocol.
 * Every JSON payload is checked against its schema below on receipt; docs/protocol.md lists them.
 */
export const FrameType = {
  /** worker → manager: JSON {@link RegisterMessage}; the first frame of a manager connection. */
  REGISTER: 1,
  /** worker → manager: JSON {@link HeartbeatMessage}, every heartbeat interval. */
  HEARTBEAT: 2,
  /** manager → worker: JSON {@link PartitionIdsMessage}, the job side released them. */
  RELEASE: 3,
  /** worker → manager: JSON {@link PartitionIdsMessage}, partitions the worker stores completely. */
  STORED: 4,
  /** producer → worker: JSON {@link OpenMessage}, opens a push session. */
  OPEN: 10,
  /** worker → producer: JSON {@link OpenedMessage}, the session holds its sort buffers now. */
  OPENED: 11,
  /** producer → worker: a u32 subpartition index, then whole framed records. */
  DATA: 12,
  /** worker → producer: a u32 count of bytes stored; returns that much credit. */
  ACK: 13,
  /** producer → worker: a serialized runtime event, broadcast to every subpartition. */
  EVENT: 14,
  /** producer → worker: JSON {@link FinishMessage}, the end of the partition's data. */
  FINISH: 15,
  /** worker → producer: JSON `{}`, the partition is stored completely. */
  FINISHED: 16,
  /** producer → worker: empty; the producer is alive but had nothing to send for a while. */
  KEEP_ALIVE: 17,
  /** consumer → worker: JSON {@link StatMessage}, asks for one stored subpartition's checksum. */
  STAT: 20,
  /** worker → consumer: JSON {@link StatReplyMessage}. */
  STAT_REPLY: 21,
  /** either way: JSON {@link ErrorMessage}; the sender closes the connection after it. */
  ERROR: 30,
} as const;

/** The name of a frame type, for messages. */
export function frameTypeName(type: number): string {
  for (const [name, value] of Object.entries(FrameType)) if (value === type) return name;
  return `unknown type ${type}`;
}

/** Most partition ids in one RELEASE or STORED frame: 256 ids take about 28 kb. */
export const MAX_PARTITION_IDS_PER_FRAME = 256;

const hex = (digits: number) => z.string().regex(new RegExp(`^[0-9a-f]{${digits}}$`));
const port = z.int().min(1).max(65535);
const count = z.int().min(0);
/** A `ResultPartitionID` in its string form (checked again by `ResultPartitionID.parse`). */
const partitionIdText = z.string().min(1).max(256);

/** A worker's registration; it registers again with the same after its connection was lost. */
export const RegisterMessage = z.strictObject({
  /** Where producers and consumers reach the worker (`remote-shuffle.worker.host`). */
  host: z.string().min(1).max(255),
  rpcPort: port,
  dataPort: port,
  /** 32 hex digits, new at every start of the worker process. */
  incarnation: hex(32),
  /**
   * 64 hex digits, new at every start, known only to the worker and the manager it registers
   * with: it keys the access tokens of the worker's partitions, and only a registration that
   * repeats it may take over an incarnation's place.
   */
  secret: hex(64),
  /** Its process id, for operators. */
  pid: count,
});
/** {@inheritDoc RegisterMessage} */
export type RegisterMessage = z.infer<typeof RegisterMessage>;

/** What a worker's stored partitions put on disk since it started. */
const storage = z.strictObject({
  fileBytesWritten: count,
  bytesBeforeCompression: count,
  bytesAfterCompression: count,
  filesCreated: count,
  filesDeleted: count,
  filesOnDisk: count,
});

/** A worker's heartbeat. */
export const HeartbeatMessage = z.strictObject({
  /** Partitions stored completely. */
  partitions: count,
  storage,
});
/** {@inheritDoc HeartbeatMessage} */
export type HeartbeatMessage = z.infer<typeof HeartbeatMessage>;

/** Partitions a RELEASE or STORED frame names. */
export const PartitionIdsMessage = z.strictObject({
  partitionIds: z.array(partitionIdText).max(MAX_PARTITION_IDS_PER_FRAME),
});
/** {@inheritDoc PartitionIdsMessage} */
export type PartitionIdsMessage = z.infer<typeof PartitionIdsMessage>;

/** A producer opens a push session: its partition's deployment descriptor (its codec checks it). */
export const OpenMessage = z.strictObject({
  descriptor: z.record(z.string(), z.json()),
});
/** {@inheritDoc OpenMessage} */
export type OpenMessage = z.infer<typeof OpenMessage>;

/** The worker admitted a push session. */
export const OpenedMessage = z.strictObject({
  /** Bytes the producer may have in flight. */
  credit: z.int().min(1),
  /** The session ends after this long without a frame: send KEEP_ALIVE well before. */
  idleTimeoutMs: z.int().min(1),
});
/** {@inheritDoc OpenedMessage} */
export type OpenedMessage = z.infer<typeof OpenedMessage>;

/** The CRC32 and byte count of one subpartition's record stream. */
const checksum = z.strictObject({ crc: z.int().min(0).max(0xffffffff), bytes: count });

/** The end of a pushed partition: one checksum per subpartition. */
export const FinishMessage = z.strictObject({
  checksums: z.array(checksum),
});
/** {@inheritDoc FinishMessage} */
export type FinishMessage = z.infer<typeof FinishMessage>;

/**
 * A consumer asks for the checksum of one subpartition it read to its end. It names the
 * incarnation and the access token its descriptor carries: the worker answers only a query that
 * proves the manager assigned it the partition, and never says which incarnation it is.
 */
export const StatMessage = z.strictObject({
  id: count,
  partitionId: partitionIdText,
  subpartition: count,
  incarnation: hex(32),
  jobId: hex(32),
  token: hex(64),
});
/** {@inheritDoc StatMessage} */
export type StatMessage = z.infer<typeof StatMessage>;

/** An error as it crosses the remote shuffle's connections. */
export const ErrorMessage = z.strictObject({
  code: z.string().max(64),
  name: z.string().max(256),
  message: z.string().max(16 * 1024),
});
/** {@inheritDoc ErrorMessage} */
export type ErrorMessage = z.infer<typeof ErrorMessage>;

/** The answer to one STAT: the checksum, or why there is none. */
export const StatReplyMessage = z.union([
  z.strictObject({ id: count, checksum }),
  z.strictObject({ id: count, error: ErrorMessage }),
]);
/** {@inheritDoc StatReplyMessage} */
export type StatReplyMessage = z.infer<typeof StatReplyMessage>;

/**
 * Parses and checks a JSON payload against its schema.
 *
 * @throws ProtocolError naming the frame type, the peer and what was wrong, for a payload that is
 *   not JSON or does not match.
 */
export function parseMessage<T>(
  schema: z.ZodType<T>,
  type: number,
  payload: Buffer,
  from: string,
): T {
  const what = `remote shuffle ${frameTypeName(type)} frame from ${from}`;
  let json: unknown;
  try {
    json = JSON.parse(payload.toString("utf8"));
  } catch (error) {
    throw new ProtocolError(`${what} is not JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path =
      issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
    throw new ProtocolError(`${what} is malformed${path}: ${issue?.message ?? "invalid"}`);
  }
  return parsed.data;
}

/**
 * A partition id of a message.
 *
 * @throws ProtocolError when `text` is not a `ResultPartitionID`.
 */
export function parsePartitionId(text: string, from: string): ResultPartitionID {
  try {
    return ResultPartitionID.parse(text);
  } catch (error) {
    throw new ProtocolError(
      `${from} named ${JSON.stringify(text.slice(0, 128))}, which is not a result partition id`,
      { cause: error },
    );
  }
}

/** `items` in frames of at most {@link MAX_PARTITION_IDS_PER_FRAME}. */
export function inFrames<T>(items: readonly T[]): T[][] {
  const frames: T[][] = [];
  for (let i = 0; i < items.length; i += MAX_PARTITION_IDS_PER_FRAME) {
    frames.push(items.slice(i, i + MAX_PARTITION_IDS_PER_FRAME));
  }
  return frames;
}
