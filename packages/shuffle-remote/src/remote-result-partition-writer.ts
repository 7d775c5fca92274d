import {
  AvailabilityHelper,
  ErrorCodes,
  EventSerializer,
  IllegalStateError,
  PartitionConnectionError,
  ProducerFailedError,
  ProtocolError,
  RecordTooLargeError,
  type ResultPartitionID,
  type RuntimeEvent,
  reconstructError,
} from "@sluice/core";
import type { Transport } from "@sluice/network/plugin";
import {
  type ResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  type ResultPartitionMetrics,
  type ResultPartitionWriter,
} from "@sluice/runtime-api";
import { FrameConnection, MAX_FRAME_SIZE } from "./frame-connection.js";
import {
  describeWorker,
  type ShuffleWorkerAddress,
  workerOf,
} from "./remote-shuffle-descriptor.js";
import { ErrorMessage, FrameType, OpenedMessage, parseMessage } from "./remote-shuffle-messages.js";
import { SubpartitionChecksum } from "./subpartition-checksum.js";

/** What a writer needs from its environment. */
export interface RemoteResultPartitionWriterOptions {
  readonly owningTaskName: string;
  readonly deployment: ResultPartitionDeploymentDescriptor;
  readonly transport: Transport;
  readonly connectTimeoutMs: number;
  /** Bytes of records per DATA frame of one subpartition (the segment size). */
  readonly chunkSize: number;
  /** `remote-shuffle.job.memory-per-partition`: bytes buffered or in flight, at most. */
  readonly memoryPerPartition: number;
  /** `taskmanager.network.max-record-size`: the largest record payload. */
  readonly maxRecordSize: number;
}

interface OutgoingFrame {
  readonly type: number;
  readonly parts: Uint8Array[];
  /** Credit the frame takes: its record bytes (DATA only). */
  readonly credit: number;
  /** The chunk the frame is a view of, reused once the worker acknowledged it. */
  readonly chunk?: Buffer;
}

/**
 * The producer side of a partition stored on a shuffle worker: records are collected per
 * subpartition into chunks of one segment, and each full chunk is pushed to the worker as a DATA
 * frame. The worker grants credit (bytes in flight) and returns it as it stores the data, so the
 * producer holds at most `remote-shuffle.job.memory-per-partition` (plus one record): beyond it
 * the writer is unavailable, and a slow worker back-pressures its producer. A chunk the worker
 * acknowledged is filled again rather than dropped, so a push allocates only as many chunks as
 * it has in flight at most, and leaves the garbage collector nothing per segment.
 *
 * The writer keeps the CRC32 and byte count of each subpartition's records and sends them with
 * FINISH; the worker keeps them for the consumers, which check what they read against them.
 * `finish()` completes asynchronously: the writer is unavailable until the worker confirmed that
 * the partition is stored completely, and `getFailureCause()` tells when it could not be.
 */
export class RemoteResultPartitionWriter implements ResultPartitionWriter {
  readonly partitionId: ResultPartitionID;
  readonly numberOfSubpartitions: number;
  readonly worker: ShuffleWorkerAddress;
  private readonly availability = new AvailabilityHelper();
  private readonly chunks: (Buffer | undefined)[];
  /** Per subpartition, bytes used in its chunk (4 for the subpartition index, then records). */
  private readonly fills: Int32Array;
  /** DATA frames sent and not yet acknowledged, oldest first, with the chunk each one views. */
  private readonly unacknowledged: OutgoingFrame[] = [];
  private unacknowledgedHead = 0;
  /** Bytes of credit returned but not yet matched to whole frames of `unacknowledged`. */
  private acknowledged = 0;
  /** Chunks acknowledged by the worker, to be filled again. */
  private readonly freeChunks: Buffer[] = [];
  private readonly checksums: SubpartitionChecksum[];
  private readonly outbox: OutgoingFrame[] = [];
  private outboxBytes = 0;
  private bufferedBytes = 0;
  private connection: FrameConnection | undefined;
  private credit = 0;
  private inFlight = 0;
  private opened = false;
  private finishCalled = false;
  private stored = false;
  private released = false;
  private failure: Error | undefined;
  private bytesOut = 0;
  private buffersOut = 0;
  private unavailableSince: number | undefined;
  private backPressuredMs = 0;
  /** Sends KEEP_ALIVE while the push is open and nothing else went out for a while. */
  private keepAlive: NodeJS.Timeout | undefined;
  private sentSinceKeepAlive = false;

  constructor(private readonly options: RemoteResultPartitionWriterOptions) {
    const { partitionDescriptor, shuffleDescriptor } = options.deployment;
    this.partitionId = shuffleDescriptor.resultPartitionId;
    this.numberOfSubpartitions = partitionDescriptor.numberOfSubpartitions;
    this.worker = workerOf(shuffleDescriptor);
    this.chunks = new Array(this.numberOfSubpartitions).fill(undefined);
    this.fills = new Int32Array(this.numberOfSubpartitions);
    this.checksums = Array.from(
      { length: this.numberOfSubpartitions },
      () => new SubpartitionChecksum(),
    );
    const writer = this;
    this.metrics = {
      get numBytesOut() {
        return writer.bytesOut;
      },
      get numBuffersOut() {
        return writer.buffersOut;
      },
      outPoolUsage: () =>
        Math.min(1, (this.bufferedBytes + this.inFlight) / this.options.memoryPerPartition),
      get backPressuredTimeMs() {
        return writer.backPressuredMs;
      },
    };
  }

  readonly metrics: ResultPartitionMetrics;

  setup(): void {
    if (this.connection !== undefined || this.released) {
      throw new IllegalStateError(`${this.partitionId}: setup() called twice or after release`);
    }
    const { host, rpcPort } = this.worker;
    this.options.transport
      .connect({
        host,
        port: rpcPort,
        connectTimeoutMs: this.options.connectTimeoutMs,
        maxFrameSize: MAX_FRAME_SIZE,
      })
      .then(
        (transportConnection) => {
          if (this.released) {
            transportConnection.destroy();
            return;
          }
          const connection = new FrameConnection(
            transportConnection,
            {
              onFrame: (type, payload) => this.onFrame(type, payload),
              onClose: (cause) => this.onClose(cause),
              onDrain: () => this.pump(),
            },
            { maxFrameSize: MAX_FRAME_SIZE },
          );
          this.connection = connection;
          connection.sendJson(FrameType.OPEN, {
            descriptor: ResultPartitionDeploymentDescriptorCodec.toJSON(this.options.deployment),
          });
        },
        (error: unknown) => this.failWith(this.lost("could not connect to", error)),
      );
  }

  isAvailable(): boolean {
    return this.availability.isAvailable();
  }

  getAvailableFuture(): Promise<void> {
    return this.availability.getAvailableFuture();
  }

  emitRecord(record: Uint8Array, targetSubpartition: number): void {
    if (this.failure !== undefined || this.finishCalled || this.released) this.checkWritable();
    const bytes = record.byteLength;
    if (bytes - 4 > this.options.maxRecordSize) {
      throw new RecordTooLargeError(
        `${this.options.owningTaskName}: a record of ${bytes - 4} bytes exceeds 'taskmanager.network.max-record-size' (${this.options.maxRecordSize} bytes)`,
      );
    }
    // The common case, kept small: the record fits its subpartition's chunk.
    const chunk = this.chunks[targetSubpartition];
    const fill = this.fills[targetSubpartition] as number;
    if (chunk !== undefined && fill + bytes <= chunk.byteLength) {
      chunk.set(record, fill);
      this.fills[targetSubpartition] = fill + bytes;
      this.bytesOut += bytes;
      this.bufferedBytes += bytes;
      if (
        this.bufferedBytes + this.outboxBytes + this.inFlight >=
        this.options.memoryPerPartition
      ) {
        this.updateAvailability();
      }
      return;
    }
    this.append(record, targetSubpartition);
    this.updateAvailability();
  }

  broadcastRecord(record: Uint8Array): void {
    this.checkWritable();
    for (let i = 0; i < this.numberOfSubpartitions; i++) this.append(record, i);
    this.updateAvailability();
  }

  broadcastEvent(event: RuntimeEvent): void {
    this.checkWritable();
    // After every record emitted so far, in every subpartition.
    this.flushChunks();
    this.enqueue({
      type: FrameType.EVENT,
      parts: [EventSerializer.toSerializedEvent(event)],
      credit: 0,
    });
    this.updateAvailability();
  }

  /**
   * Does nothing: consumers read a BLOCKING partition only once it is complete, so a partly
   * filled chunk waits until it is full or the partition finishes (as Flink's sort-merge
   * partition ignores flushes).
   */
  flush(_targetSubpartition: number): void {}

  flushAll(): void {}

  finish(): void {
    this.checkWritable();
    this.finishCalled = true;
    this.flushChunks();
    // Nothing is written any more: acknowledged chunks are dropped, not kept for reuse.
    this.freeChunks.length = 0;
    this.enqueue({
      type: FrameType.FINISH,
      parts: [
        Buffer.from(
          JSON.stringify({ checksums: this.checksums.map((checksum) => checksum.toJSON()) }),
        ),
      ],
      credit: 0,
    });
    this.updateAvailability();
  }

  isFinished(): boolean {
    return this.finishCalled;
  }

  fail(cause: Error | undefined): void {
    this.failWith(
      new ProducerFailedError(
        `${this.options.owningTaskName} failed while writing ${this.partitionId}: ${cause?.message ?? "no cause given"}`,
        { cause },
      ),
    );
  }

  release(cause?: Error): void {
    if (this.released) return;
    this.released = true;
    this.stopKeepAlive();
    if (cause !== undefined && this.failure === undefined) this.failure = cause;
    this.dropBuffered();
    if (this.stored) this.connection?.close();
    else this.connection?.destroy(cause);
    this.availability.resetAvailable();
  }

  isReleased(): boolean {
    return this.released;
  }

  close(): void {
    this.release();
  }

  getFailureCause(): Error | undefined {
    return this.failure;
  }

  /** No buffer pool: records are collected in this writer's chunks (for metrics). */
  getBufferPool(): undefined {
    return undefined;
  }

  /** Frames waiting for the connection or for credit, of one subpartition or all (for metrics). */
  getNumberOfQueuedBuffers(subpartition?: number): number {
    if (subpartition === undefined) return this.outbox.length;
    let queued = 0;
    for (const frame of this.outbox) {
      const head = frame.parts[0];
      if (frame.type === FrameType.DATA && head !== undefined && readU32(head) === subpartition) {
        queued++;
      }
    }
    return queued;
  }

  /** Record bytes collected or waiting to be sent (for metrics). */
  getNumberOfQueuedBytes(): number {
    return this.bufferedBytes + this.outboxBytes;
  }

  /** True once the worker confirmed that it stores the whole partition. */
  isStored(): boolean {
    return this.stored;
  }

  private checkWritable(): void {
    if (this.failure !== undefined) throw this.failure;
    if (this.finishCalled || this.released) {
      throw new IllegalStateError(`${this.partitionId}: written after finish() or release()`);
    }
  }

  private append(record: Uint8Array, subpartition: number): void {
    this.bytesOut += record.byteLength;
    const size = this.options.chunkSize;
    if (record.byteLength + 4 > size) {
      // Larger than a chunk: what was collected goes first, the record in a frame of its own.
      this.flushChunk(subpartition);
      this.checksums[subpartition]?.update(record);
      this.enqueueData(subpartition, [record]);
      return;
    }
    let chunk = this.chunks[subpartition];
    let fill = this.fills[subpartition] as number;
    if (chunk !== undefined && fill + record.byteLength > size) {
      this.flushChunk(subpartition);
      chunk = undefined;
    }
    if (chunk === undefined) {
      chunk = this.freeChunks.pop() ?? Buffer.allocUnsafeSlow(size);
      chunk.writeUInt32BE(subpartition, 0);
      this.chunks[subpartition] = chunk;
      fill = 4;
    }
    chunk.set(record, fill);
    this.fills[subpartition] = fill + record.byteLength;
    this.bufferedBytes += record.byteLength;
  }

  private flushChunks(): void {
    for (let i = 0; i < this.numberOfSubpartitions; i++) this.flushChunk(i);
  }

  private flushChunk(subpartition: number): void {
    const chunk = this.chunks[subpartition];
    if (chunk === undefined) return;
    const fill = this.fills[subpartition] as number;
    this.chunks[subpartition] = undefined;
    this.fills[subpartition] = 0;
    this.bufferedBytes -= fill - 4;
    // One CRC32 call per chunk rather than per record: the chunk is the stream's next bytes.
    this.checksums[subpartition]?.update(chunk.subarray(4, fill));
    this.enqueue({
      type: FrameType.DATA,
      parts: [chunk.subarray(0, fill)],
      credit: fill - 4,
      chunk,
    });
  }

  private enqueueData(subpartition: number, records: Uint8Array[]): void {
    const head = Buffer.allocUnsafe(4);
    head.writeUInt32BE(subpartition, 0);
    let credit = 0;
    for (const record of records) credit += record.byteLength;
    this.enqueue({
      type: FrameType.DATA,
      parts: [head, ...records.map((r) => Buffer.from(r))],
      credit,
    });
  }

  private enqueue(frame: OutgoingFrame): void {
    this.outbox.push(frame);
    this.outboxBytes += frame.credit;
    this.pump();
  }

  /** Sends what the worker's credit allows, in order; events and FINISH need no credit. */
  private pump(): void {
    const connection = this.connection;
    if (!this.opened || connection === undefined || this.failure !== undefined) return;
    while (this.outbox.length > 0) {
      const frame = this.outbox[0] as OutgoingFrame;
      // A frame larger than the whole credit goes alone, once nothing else is in flight.
      if (frame.credit > 0 && this.inFlight > 0 && this.inFlight + frame.credit > this.credit) {
        break;
      }
      this.outbox.shift();
      this.outboxBytes -= frame.credit;
      this.inFlight += frame.credit;
      if (frame.type === FrameType.DATA) {
        this.buffersOut++;
        this.unacknowledged.push(frame);
      }
      this.sentSinceKeepAlive = true;
      if (!connection.send(frame.type, ...frame.parts)) break;
    }
    this.updateAvailability();
  }

  /**
   * The worker ends a push session that sends nothing for its idle timeout (it says which in
   * OPENED): a third of it without a frame sends KEEP_ALIVE, so a producer that is slow, or
   * waits for credit or for FINISHED, keeps its session.
   */
  private startKeepAlive(idleTimeoutMs: number): void {
    clearInterval(this.keepAlive);
    this.keepAlive = setInterval(
      () => {
        if (!this.sentSinceKeepAlive) this.connection?.send(FrameType.KEEP_ALIVE);
        this.sentSinceKeepAlive = false;
      },
      Math.max(1, Math.floor(idleTimeoutMs / 3)),
    );
    this.keepAlive.unref();
  }

  private stopKeepAlive(): void {
    clearInterval(this.keepAlive);
    this.keepAlive = undefined;
  }

  private onFrame(type: number, payload: Buffer): void {
    const from = this.describeWorker();
    if (type === FrameType.OPENED) {
      const { credit, idleTimeoutMs } = parseMessage(OpenedMessage, type, payload, from);
      this.credit = Math.max(1, Math.min(credit, this.options.memoryPerPartition));
      this.opened = true;
      this.startKeepAlive(idleTimeoutMs);
      this.pump();
    } else if (type === FrameType.ACK) {
      if (payload.byteLength !== 4) {
        throw new ProtocolError(`${from} sent an ACK frame of ${payload.byteLength} bytes, not 4`);
      }
      const bytes = payload.readUInt32BE(0);
      this.inFlight -= bytes;
      this.reuseAcknowledged(bytes);
      this.pump();
    } else if (type === FrameType.FINISHED) {
      this.stored = true;
      this.stopKeepAlive();
      this.updateAvailability();
    } else if (type === FrameType.ERROR) {
      const { code, name, message } = parseMessage(ErrorMessage, type, payload, from);
      const cause = reconstructError(code, name, message, { partitionId: this.partitionId });
      this.failWith(
        code === ErrorCodes.PARTITION_NOT_FOUND ? cause : this.lost("was refused by", cause),
      );
    } else {
      throw new ProtocolError(`${from} sent frame type ${type}, which a producer does not accept`);
    }
  }

  private onClose(cause: Error | undefined): void {
    if (this.stored || this.released) return;
    this.failWith(this.lost("lost its connection to", cause));
  }

  private lost(what: string, cause: unknown): Error {
    const reason = cause instanceof Error ? `: ${cause.message}` : "";
    return new PartitionConnectionError(
      `${this.options.owningTaskName}: the push of ${this.partitionId} ${what} ${this.describeWorker()}${reason}`,
      { cause, partitionId: this.partitionId },
    );
  }

  /**
   * The worker stored `bytes` more, in the order the frames were sent (one ACK may cover several
   * frames): the chunks of the frames now wholly stored are free to be filled again. The worker
   * has them, so the socket no longer needs their memory.
   */
  private reuseAcknowledged(bytes: number): void {
    this.acknowledged += bytes;
    const frames = this.unacknowledged;
    let head = this.unacknowledgedHead;
    for (let frame = frames[head]; frame !== undefined; frame = frames[head]) {
      if (frame.credit > this.acknowledged) break;
      this.acknowledged -= frame.credit;
      head++;
      if (frame.chunk !== undefined && !this.finishCalled) {
        this.freeChunks.push(frame.chunk);
      }
    }
    if (head === frames.length) {
      frames.length = 0;
      head = 0;
    } else if (head > 1024) {
      frames.splice(0, head);
      head = 0;
    }
    this.unacknowledgedHead = head;
  }

  private describeWorker(): string {
    return describeWorker(this.worker);
  }

  private failWith(error: Error): void {
    this.stopKeepAlive();
    if (this.failure !== undefined || this.stored) return;
    this.failure = error;
    this.dropBuffered();
    this.connection?.destroy(error);
    this.availability.resetAvailable();
  }

  private dropBuffered(): void {
    this.chunks.fill(undefined);
    this.unacknowledged.length = 0;
    this.unacknowledgedHead = 0;
    this.freeChunks.length = 0;
    this.outbox.length = 0;
    this.outboxBytes = 0;
    this.bufferedBytes = 0;
  }

  private updateAvailability(): void {
    const blocked =
      this.failure === undefined &&
      !this.released &&
      ((this.finishCalled && !this.stored) ||
        this.bufferedBytes + this.outboxBytes + this.inFlight >= this.options.memoryPerPartition);
    if (blocked) {
      if (this.availability.isAvailable()) {
        this.availability.resetUnavailable();
        this.unavailableSince = performance.now();
      }
    } else if (!this.availability.isAvailable()) {
      if (this.unavailableSince !== undefined) {
        this.backPressuredMs += performance.now() - this.unavailableSince;
        this.unavailableSince = undefined;
      }
      this.availability.resetAvailable();
    }
  }
}

function readU32(bytes: Uint8Array): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0);
}
