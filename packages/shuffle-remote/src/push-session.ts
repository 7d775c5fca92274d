import { EventSerializer, ProtocolError, type ResultPartitionID } from "@sluice/core";
import type { NetworkResultPartition } from "@sluice/network";
import type { FrameConnection } from "./frame-connection.js";
import { FrameType } from "./frame-connection.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

/**
 * Frames a session queues before it stops reading its producer's connection: what a worker holds
 * per producer beyond the partition's sort buffers. The producer's socket then backs up, and its
 * credit (`remote-shuffle.job.memory-per-partition`) stops it.
 */
const MAX_QUEUED_BYTES = 1024 * 1024;

/** What a push session reports to its worker. */
export interface PushSessionOwner {
  /** The partition is stored completely, with the producer's checksums. */
  onComplete(session: PushSession, checksums: readonly SubpartitionChecksumJSON[]): void;
  /** The session ended before the partition was complete: its data must be discarded. */
  onAbandoned(session: PushSession, cause: Error): void;
}

/**
 * One producer pushing one partition to a shuffle worker: its frames are applied to the worker's
 * sort-merge partition in order, each record only when the partition is available (its sort
 * buffer has room), and every DATA frame is acknowledged once stored, returning its bytes of
 * credit to the producer. A partition is complete only after FINISH was applied and its files
 * were written; a connection that ends before that abandons it.
 */
export class PushSession {
  private readonly queue: { type: number; payload: Buffer }[] = [];
  private queuedBytes = 0;
  private paused = false;
  private pumping = false;
  private done = false;

  constructor(
    readonly partitionId: ResultPartitionID,
    readonly writer: NetworkResultPartition,
    private readonly connection: FrameConnection,
    private readonly owner: PushSessionOwner,
  ) {}

  /** True once the partition is stored completely or the session was abandoned. */
  isDone(): boolean {
    return this.done;
  }

  /** A frame of the producer's connection. */
  onFrame(type: number, payload: Buffer): void {
    if (this.done) return;
    if (type !== FrameType.DATA && type !== FrameType.EVENT && type !== FrameType.FINISH) {
      this.abandon(
        new ProtocolError(
          `unexpected frame type ${type} from producer ${this.connection.remoteAddress} of ${this.partitionId}`,
        ),
      );
      return;
    }
    this.queue.push({ type, payload });
    this.queuedBytes += payload.byteLength;
    if (this.queuedBytes > MAX_QUEUED_BYTES && !this.paused) {
      this.paused = true;
      this.connection.pause();
    }
    void this.pump();
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

  /** Ends the session without storing the partition (the producer failed or went away). */
  abandon(cause: Error): void {
    if (this.done) return;
    this.done = true;
    this.queue.length = 0;
    this.owner.onAbandoned(this, cause);
    this.connection.destroy(cause);
  }

  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      for (let item = this.queue.shift(); item !== undefined; item = this.queue.shift()) {
        this.queuedBytes -= item.payload.byteLength;
        if (item.type === FrameType.DATA) await this.store(item.payload);
        else if (item.type === FrameType.EVENT) {
          await this.whenAvailable();
          this.writer.broadcastEvent(EventSerializer.fromSerializedEvent(item.payload));
        } else await this.finish(item.payload);
        if (this.done) return;
        if (this.paused && this.queuedBytes <= MAX_QUEUED_BYTES / 2) {
          this.paused = false;
          this.connection.resume();
        }
      }
    } catch (error) {
      this.abandon(error instanceof Error ? error : new Error(String(error)));
    } finally {
      this.pumping = false;
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
   * same stream for the consumer's deserializer, without a call and a slice per record.
   */
  private async store(payload: Buffer): Promise<void> {
    if (payload.byteLength < 4) throw this.malformed("a DATA frame without its subpartition");
    const subpartition = payload.readUInt32BE(0);
    if (subpartition >= this.writer.numberOfSubpartitions) {
      throw this.malformed(
        `subpartition ${subpartition} of a partition with ${this.writer.numberOfSubpartitions}`,
      );
    }
    // Whole records only: a frame that cuts one would corrupt the stream for every reader.
    for (let offset = 4; offset < payload.byteLength; ) {
      if (payload.byteLength - offset < 4) throw this.malformed("a record cut in its length");
      offset += 4 + payload.readUInt32BE(offset);
      if (offset > payload.byteLength) throw this.malformed("a record longer than its frame");
    }
    if (!this.writer.isAvailable()) await this.whenAvailable();
    if (this.done) return;
    this.writer.emitRecord(payload.subarray(4), subpartition);
    const ack = Buffer.allocUnsafe(4);
    ack.writeUInt32BE(payload.byteLength - 4, 0);
    this.connection.send(FrameType.ACK, ack);
  }

  private async finish(payload: Buffer): Promise<void> {
    const { checksums } = JSON.parse(payload.toString("utf8")) as {
      checksums: SubpartitionChecksumJSON[];
    };
    if (!Array.isArray(checksums) || checksums.length !== this.writer.numberOfSubpartitions) {
      throw this.malformed("a FINISH frame without one checksum per subpartition");
    }
    await this.whenAvailable();
    this.writer.finish();
    // The sort-merge partition writes its last region and index asynchronously.
    await this.whenAvailable();
    if (this.done) return;
    this.writer.close();
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
