import { EventSerializer, ProtocolError, type ResultPartitionID } from "@sluice/core";
import type { NetworkResultPartition } from "@sluice/network/plugin";
import type { FrameConnection } from "./frame-connection.js";
import {
  FinishMessage,
  FrameType,
  frameTypeName,
  parseMessage,
} from "./remote-shuffle-messages.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

/**
 * Stored bytes acknowledged in one ACK at most: credit goes back in steps of this size (or at the
 * end of the event-loop turn), not in one frame per segment.
 */
const MAX_ACK_BYTES = 1024 * 1024;

/** What a push session reports to its worker. */
export interface PushSessionOwner {
  /** The partition is stored completely, with the producer's checksums. */
  onComplete(session: PushSession, checksums: readonly SubpartitionChecksumJSON[]): void;
  /** The session ended before the partition was complete: its data must be discarded. */
  onAbandoned(session: PushSession, cause: Error): void;
}

/** How much a push session queues while its partition spills. */
export interface PushSessionOptions {
  /**
   * `remote-shuffle.worker.memory.receiving-size-per-partition`: bytes of frames queued at most
   * before the session stops reading its producer's connection. The producer's socket then backs
   * up, and its credit (`remote-shuffle.job.memory-per-partition`) stops it.
   */
  readonly maxQueuedBytes: number;
}

/**
 * One producer pushing one partition to a shuffle worker: its frames are applied to the worker's
 * sort-merge partition in order, each only when the partition is available (its sort buffer has
 * room). A frame that arrives while the partition is available goes in at once, from the read it
 * came in (no copy); frames that arrive while a spill is written are copied and queued (up to
 * `remote-shuffle.worker.memory.receiving-size-per-partition`), and go in when it completed. Stored bytes are acknowledged, which
 * returns their credit to the producer, as soon as they are in the sort buffer, not once they
 * are on disk: the producer keeps sending during a spill. A partition is complete only after
 * FINISH was applied and its files were written; a connection that ends before that abandons it.
 */
export class PushSession {
  private readonly queue: { type: number; payload: Buffer }[] = [];
  private queuedBytes = 0;
  private paused = false;
  private draining = false;
  private done = false;
  /** Bytes stored and not acknowledged yet. */
  private unacknowledged = 0;
  private ackScheduled = false;

  constructor(
    readonly partitionId: ResultPartitionID,
    readonly writer: NetworkResultPartition,
    private readonly connection: FrameConnection,
    private readonly owner: PushSessionOwner,
    private readonly options: PushSessionOptions,
  ) {}

  /** True once the partition is stored completely or the session was abandoned. */
  isDone(): boolean {
    return this.done;
  }

  /** A frame of the producer's connection; `payload` is valid during the call only. */
  onFrame(type: number, payload: Buffer): void {
    if (this.done) return;
    // The connection's idle timeout saw it: the producer is alive.
    if (type === FrameType.KEEP_ALIVE) return;
    if (type !== FrameType.DATA && type !== FrameType.EVENT && type !== FrameType.FINISH) {
      this.abandon(
        new ProtocolError(
          `unexpected ${frameTypeName(type)} frame from producer ${this.connection.remoteAddress} of ${this.partitionId}`,
        ),
      );
      return;
    }
    if (type === FrameType.FINISH) {
      // Checked on arrival, not when it is applied: a malformed one is refused at once.
      try {
        const { checksums } = parseMessage(
          FinishMessage,
          type,
          payload,
          `producer ${this.connection.remoteAddress} of ${this.partitionId}`,
        );
        if (checksums.length !== this.writer.numberOfSubpartitions) {
          throw this.malformed("a FINISH frame without one checksum per subpartition");
        }
      } catch (error) {
        this.abandon(error as Error);
        return;
      }
    }
    try {
      if (this.queue.length === 0 && !this.draining && this.tryApply(type, payload)) return;
    } catch (error) {
      this.abandon(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.queue.push({ type, payload: Buffer.from(payload) });
    this.queuedBytes += payload.byteLength;
    if (this.queuedBytes > this.options.maxQueuedBytes && !this.paused) {
      this.paused = true;
      this.connection.pause();
    }
    void this.drain();
  }

  /** The producer's connection closed. */
  onClose(cause: Error | undefined): void {
    if (this.done) return;
    this.abandon(
      cause ??
        new ProtocolError(
          `producer ${this.connection.remoteAddress} closed its connection before ${this.partitionId} was complete`,
        ),
    );
  }

  /**
   * Ends the session without storing the partition (the producer failed, went away, broke the
   * protocol or was idle too long): its data is discarded, and a producer still connected gets
   * an ERROR frame naming `cause`.
   */
  abandon(cause: Error): void {
    if (this.done) return;
    this.done = true;
    this.queue.length = 0;
    this.owner.onAbandoned(this, cause);
    this.connection.refuse(cause);
  }

  /**
   * Applies a DATA or EVENT frame if the partition is available now; false when it must wait.
   * FINISH always waits for the drain (it completes asynchronously).
   */
  private tryApply(type: number, payload: Buffer): boolean {
    if (type === FrameType.FINISH || !this.writer.isAvailable()) return false;
    if (type === FrameType.DATA) this.store(payload);
    else this.writer.broadcastEvent(EventSerializer.fromSerializedEvent(payload));
    return true;
  }

  /** Applies the queued frames in order, each once the partition is available. */
  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      for (let item = this.queue[0]; item !== undefined; item = this.queue[0]) {
        if (item.type === FrameType.FINISH) {
          this.queue.shift();
          await this.finish(item.payload);
          return;
        }
        if (!this.tryApply(item.type, item.payload)) {
          await this.whenAvailable();
          if (this.done) return;
          continue;
        }
        this.queue.shift();
        this.queuedBytes -= item.payload.byteLength;
        if (this.paused && this.queuedBytes <= this.options.maxQueuedBytes / 2) {
          this.paused = false;
          this.connection.resume();
        }
      }
    } catch (error) {
      this.abandon(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.draining = false;
    }
  }

  private async whenAvailable(): Promise<void> {
    while (!this.writer.isAvailable() && !this.done) await this.writer.getAvailableFuture();
    const failure = this.writer.getFailureCause();
    if (failure !== undefined) throw failure;
  }

  /**
   * A DATA frame: a u32 subpartition, then whole framed records (u32 length + payload). The
   * partition treats records as opaque bytes of the subpartition's stream (it neither writes nor
   * reads their lengths), so the frame's records go in with one call, as one run of bytes: the
   * same stream for the consumer's deserializer, without a call and a slice per record. The
   * partition copies them (into its sort buffer, or a pending copy when that is full).
   */
  private store(payload: Buffer): void {
    const end = payload.byteLength;
    if (end < 4) throw this.malformed("a DATA frame without its subpartition");
    const subpartition = payload.readUInt32BE(0);
    if (subpartition >= this.writer.numberOfSubpartitions) {
      throw this.malformed(
        `subpartition ${subpartition} of a partition with ${this.writer.numberOfSubpartitions}`,
      );
    }
    // Whole records only: a frame that cuts one would corrupt the stream for every reader.
    let offset = 4;
    while (end - offset >= 4) offset += 4 + payload.readUInt32BE(offset);
    if (offset !== end) {
      throw this.malformed(
        offset < end ? "a record cut in its length" : "a record longer than its frame",
      );
    }
    this.writer.emitRecord(payload.subarray(4), subpartition);
    this.acknowledge(end - 4);
  }

  /**
   * Returns `bytes` of credit: at once when a step's worth waits, otherwise at the end of this
   * event-loop turn, so the frames of one read are acknowledged together.
   */
  private acknowledge(bytes: number): void {
    this.unacknowledged += bytes;
    if (this.unacknowledged >= MAX_ACK_BYTES) this.sendAck();
    else if (!this.ackScheduled) {
      this.ackScheduled = true;
      setImmediate(() => {
        this.ackScheduled = false;
        this.sendAck();
      });
    }
  }

  private sendAck(): void {
    if (this.unacknowledged === 0 || this.done) return;
    const ack = Buffer.allocUnsafe(4);
    ack.writeUInt32BE(this.unacknowledged, 0);
    this.unacknowledged = 0;
    this.connection.send(FrameType.ACK, ack);
  }

  private async finish(payload: Buffer): Promise<void> {
    const { checksums } = parseMessage(FinishMessage, FrameType.FINISH, payload, "the producer");
    await this.whenAvailable();
    this.writer.finish();
    // The sort-merge partition writes its last region and index asynchronously.
    await this.whenAvailable();
    if (this.done) return;
    this.writer.close();
    this.sendAck();
    this.done = true;
    this.owner.onComplete(this, checksums);
    this.connection.sendJson(FrameType.FINISHED, {});
  }

  private malformed(what: string): ProtocolError {
    return new ProtocolError(
      `producer ${this.connection.remoteAddress} of ${this.partitionId} sent ${what}`,
    );
  }
}
