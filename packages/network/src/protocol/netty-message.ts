import type { DataType, InputChannelID, NetworkBuffer, ResultPartitionID } from "@sluice/core";
import type { MessageId } from "./message-id.js";

/**
 * The header fields of a BufferResponse (id 0, server → client), in write order. What follows the
 * fixed fields (`BUFFER_RESPONSE` in `message-layout.ts`): `partialBufferSizes.length` int32
 * sizes, then `bufferSize` payload bytes.
 */
export interface BufferResponseHeader {
  /** The logical channel (input channel) the buffer is for. */
  readonly receiverId: InputChannelID;
  /** The subpartition the buffer was taken from (>= 0). */
  readonly subpartitionId: number;
  /**
   * Sizes of the partial buffers packed into this one (Flink 2.0, FLINK-36072): each >= 1 and
   * summing to `bufferSize`; empty for an ordinary buffer. On the wire as numberOfPartialBuffers
   * (= length) followed by the sizes.
   */
  readonly partialBufferSizes: readonly number[];
  /** Per subpartition view, starts at 0, +1 for every buffer or event sent. */
  readonly sequenceNumber: number;
  /** Finished data buffers left in the subpartition after this one (>= 0). */
  readonly backlog: number;
  /** What the payload holds; the byte on the wire is the DataType value (never NONE). */
  readonly dataType: DataType;
  /** True when the payload is compressed (data buffers only). */
  readonly isCompressed: boolean;
  /** Payload bytes following the header (>= 0). */
  readonly bufferSize: number;
}

/**
 * Id 0, server → client: one buffer or event of a subpartition. On the decoding side `buffer`
 * holds the payload (ownership passes to the receiver of the message, which must recycle it);
 * it is `undefined` for a zero-size data buffer, which only returns a credit and carries a backlog.
 */
export interface BufferResponse extends BufferResponseHeader {
  readonly id: typeof MessageId.BUFFER_RESPONSE;
  readonly buffer?: NetworkBuffer | undefined;
}

/**
 * Id 1, server → client. Sluice's own encoding (not a Java-serialized Throwable): see
 * `error-response.ts` and docs/protocol.md. Without a receiver the error is fatal for the whole
 * connection; with one it fails only that channel.
 */
export interface ErrorResponse {
  readonly id: typeof MessageId.ERROR_RESPONSE;
  /** The error's wire id (see `error-wire-ids.ts`); an unknown id decodes to a generic error. */
  readonly errorWireId: number;
  /** The class name of the error at the sender (e.g. `PartitionNotFoundError`). */
  readonly errorName: string;
  /** The error message (capped by the encoder). */
  readonly message: string;
  /** The channel the error is for; absent = fatal for the connection. */
  readonly receiverId?: InputChannelID | undefined;
}

/** Id 2, client → server: asks for the subpartitions of a result partition for one channel. */
export interface PartitionRequest {
  readonly id: typeof MessageId.PARTITION_REQUEST;
  readonly partitionId: ResultPartitionID;
  /** The inclusive range of subpartition indexes requested (Flink's ResultSubpartitionIndexSet). */
  readonly subpartitionIndexSet: { readonly start: number; readonly end: number };
  readonly receiverId: InputChannelID;
  /** The initial credit (the channel's exclusive buffers), >= 0. */
  readonly credit: number;
}

/** Id 3, client → server: a task event (EventSerializer bytes) for the producer of a partition. */
export interface TaskEventRequest {
  readonly id: typeof MessageId.TASK_EVENT_REQUEST;
  /** The serialized event; carried as opaque bytes. */
  readonly event: Uint8Array;
  readonly partitionId: ResultPartitionID;
  readonly receiverId: InputChannelID;
}

/** Id 4, client → server: the channel no longer wants data; the server releases its view. */
export interface CancelPartitionRequest {
  readonly id: typeof MessageId.CANCEL_PARTITION_REQUEST;
  readonly receiverId: InputChannelID;
}

/** Id 5, client → server: the client closes the connection; the server releases all readers. */
export interface CloseRequest {
  readonly id: typeof MessageId.CLOSE_REQUEST;
}

/** Id 6, client → server: `credit` (> 0) more buffers are available at the channel. */
export interface AddCredit {
  readonly id: typeof MessageId.ADD_CREDIT;
  readonly credit: number;
  readonly receiverId: InputChannelID;
}

/** Id 7, client → server: resume a subpartition blocked by an aligned barrier. */
export interface ResumeConsumption {
  readonly id: typeof MessageId.RESUME_CONSUMPTION;
  readonly receiverId: InputChannelID;
}

/** Id 8, client → server: the consumer processed all user records (FLIP-147). */
export interface AckAllUserRecordsProcessed {
  readonly id: typeof MessageId.ACK_ALL_USER_RECORDS_PROCESSED;
  readonly receiverId: InputChannelID;
}

/** Id 9, server → client: the subpartition has `backlog` (> 0) buffers waiting for credit. */
export interface BacklogAnnouncement {
  readonly id: typeof MessageId.BACKLOG_ANNOUNCEMENT;
  readonly backlog: number;
  readonly receiverId: InputChannelID;
}

/** Id 10, client → server: buffer debloating's new buffer size (> 0) for the channel. */
export interface NewBufferSize {
  readonly id: typeof MessageId.NEW_BUFFER_SIZE;
  readonly bufferSize: number;
  readonly receiverId: InputChannelID;
}

/** Id 11, client → server: tiered storage asks for segment `segmentId` (> 0) of a subpartition. */
export interface SegmentId {
  readonly id: typeof MessageId.SEGMENT_ID;
  readonly subpartitionId: number;
  readonly segmentId: number;
  readonly receiverId: InputChannelID;
}

/** Every message of the protocol, discriminated by `id`. */
export type NettyMessage =
  | BufferResponse
  | ErrorResponse
  | PartitionRequest
  | TaskEventRequest
  | CancelPartitionRequest
  | CloseRequest
  | AddCredit
  | ResumeConsumption
  | AckAllUserRecordsProcessed
  | BacklogAnnouncement
  | NewBufferSize
  | SegmentId;

/** Every message except BufferResponse (encoded in one allocation by `encodeMessage`). */
export type NonBufferMessage = Exclude<NettyMessage, BufferResponse>;

/** Messages a server sends and a client decodes (ids 0, 1, 9). */
export type ClientBoundMessage = BufferResponse | ErrorResponse | BacklogAnnouncement;

/** Messages a client sends and a server decodes (ids 2–8, 10, 11). */
export type ServerBoundMessage = Exclude<NettyMessage, ClientBoundMessage>;
