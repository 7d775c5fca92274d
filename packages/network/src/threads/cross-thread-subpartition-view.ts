import {
  type BufferRecycler,
  DataType,
  FreeingBufferRecycler,
  hasPriority,
  isBufferType,
  MemorySegment,
  NetworkBuffer,
  ResultPartitionID,
  reconstructError,
  type SharedNetworkMemory,
  type ThreadDoorbell,
} from "@sluice/core";
import type { BufferAndBacklog } from "../partition/buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "../partition/buffer-availability-listener.js";
import type {
  AvailabilityWithBacklog,
  ResultSubpartitionView,
} from "../partition/result-subpartition-view.js";
import {
  type QueueRecord,
  RecordKind,
  ReturnKind,
  type SharedSubpartitionQueue,
} from "./shared-subpartition-queue.js";

const DECODER = new TextDecoder();

/** The cause a {@link RecordKind.RELEASED} record carries, rebuilt; `undefined` for none. */
function decodeReleaseCause(bytes: Uint8Array): Error | undefined {
  if (bytes.length === 0) return undefined;
  const { code, name, message, partitionId } = JSON.parse(DECODER.decode(bytes)) as {
    code?: string;
    name: string;
    message: string;
    partitionId?: string;
  };
  return reconstructError(
    code,
    name,
    message,
    partitionId === undefined ? undefined : { partitionId: ResultPartitionID.parse(partitionId) },
  );
}

/**
 * A view of a subpartition that another thread of the task manager produces (the consumer's end
 * of a `SharedSubpartitionQueue`): a local channel on a slot thread, or the data server on the
 * task manager's main thread, reads it as it would read a view of its own thread. A buffer of a
 * shared segment is the producer's own memory, read in place; recycling it sends it back to the
 * producer's thread, which recycles it into the producer's pool. Events arrive copied.
 *
 * When the producer's thread dies, the view fails with the thread's cause, and every buffer of
 * that thread the consumer still holds, or that still waits in the queue, is given back to the
 * shared memory directly ({@link onProducerLost}).
 */
export class CrossThreadSubpartitionView implements ResultSubpartitionView {
  /** This end's doorbell endpoint: the producer rings it for new records and room. */
  readonly endpoint: number;
  private readonly queue: SharedSubpartitionQueue;
  private readonly memory: SharedNetworkMemory;
  private readonly doorbell: ThreadDoorbell;
  private readonly listener: BufferAvailabilityListener;
  private readonly onDisposed: (view: CrossThreadSubpartitionView) => void;
  /** Returns that found the producer's ring full, sent before any later one. */
  private readonly unsent: [number, number, number, number][] = [];
  /** Buffers of the producer this consumer holds, so a dead producer's can be given back. */
  private lentOut = 0;
  private released = false;
  private failure: Error | undefined;
  private producerLost = false;
  private disposed = false;

  constructor(
    queue: SharedSubpartitionQueue,
    memory: SharedNetworkMemory,
    doorbell: ThreadDoorbell,
    listener: BufferAvailabilityListener,
    onDisposed: (view: CrossThreadSubpartitionView) => void,
  ) {
    this.queue = queue;
    this.memory = memory;
    this.doorbell = doorbell;
    this.listener = listener;
    this.onDisposed = onDisposed;
    this.endpoint = doorbell.register(() => this.onRung());
    queue.setConsumer(doorbell.threadIndex, this.endpoint);
  }

  /** The thread that produces the subpartition. */
  get producerThread(): number {
    return this.queue.producerThread;
  }

  /** The producer pushed records, made room for returns, or released the view. */
  private onRung(): void {
    this.flushUnsent();
    if (this.released) return;
    const head = this.peekHead();
    if (head !== undefined && hasPriority(head.dataType)) {
      this.listener.notifyPriorityEvent?.(head.sequenceNumber);
    }
    if (head !== undefined || this.isReleased()) this.listener.notifyDataAvailable(this);
  }

  /**
   * The head record; none once the producer released the view (what is queued is dropped). When
   * the ring is empty, the producer rings this view with its next record.
   */
  private peekHead(): QueueRecord | undefined {
    if (this.producerLost || this.queue.isReleasedByProducer()) return undefined;
    return this.queue.peek(true);
  }

  getNextBuffer(): BufferAndBacklog | undefined {
    if (this.released) return undefined;
    const record = this.peekHead();
    if (record === undefined) return undefined;
    const buffer = this.bufferOf(record);
    const sequenceNumber = record.sequenceNumber;
    const isData = isBufferType(record.dataType);
    this.popRecord(isData);
    // This thread consumes: the producer's next records need not wake it.
    this.doorbell.markActive();
    const next = this.peekHead();
    return {
      buffer,
      buffersInBacklog: this.queue.getBacklog(),
      nextDataType: next === undefined ? DataType.NONE : (next.dataType as DataType),
      sequenceNumber,
    };
  }

  /** Takes the head record off the ring, and rings the producer when it waited for room. */
  private popRecord(isData: boolean): void {
    if (this.queue.pop(isData)) {
      this.doorbell.ring(this.queue.producerThread, this.queue.producerEndpoint);
    }
  }

  private bufferOf(record: QueueRecord): NetworkBuffer {
    if (record.kind === RecordKind.REF) {
      const segment = record.segmentOrBytes;
      const id = record.id;
      this.lentOut++;
      const recycler: BufferRecycler = { recycle: () => this.giveBack(id, segment) };
      const whole = new NetworkBuffer(
        this.memory.segment(segment),
        recycler,
        record.dataType as DataType,
        record.offset + record.size,
        record.compressed,
      );
      const buffer = whole.readOnlySlice(record.offset, record.size);
      buffer.partialRecordLength = record.partialRecordLength;
      return buffer;
    }
    const bytes = this.queue.inlineBytes(record);
    const copy = MemorySegment.allocateUnpooled(bytes.length);
    copy.putBytes(0, bytes, 0, bytes.length);
    return new NetworkBuffer(
      copy,
      FreeingBufferRecycler,
      record.dataType as DataType,
      bytes.length,
      record.compressed,
    );
  }

  /** A buffer of the producer's segment was recycled here. */
  private giveBack(id: number, segment: number): void {
    this.lentOut--;
    this.sendReturn(ReturnKind.RECYCLE, id, segment, 0);
    this.disposeWhenDone();
  }

  /**
   * Sends a return; one that finds the producer's ring full waits (in order) for the next turn.
   * With the producer's thread gone, a recycled buffer's loan goes back to the shared memory.
   */
  private sendReturn(kind: number, id: number, segment: number, value: number): void {
    if (this.producerLost) {
      if (kind === ReturnKind.RECYCLE) this.memory.returnLoan(segment);
      return;
    }
    if (this.unsent.length > 0) {
      this.unsent.push([kind, id, segment, value]);
      this.flushUnsent();
      return;
    }
    const result = this.queue.pushReturn(kind, id, segment, value);
    if (result === "pushed") {
      // A busy producer takes the returns as it produces; one that may wait for them asked.
      if (kind !== ReturnKind.RECYCLE || this.queue.takeReturnsWanted()) {
        this.doorbell.ring(this.queue.producerThread, this.queue.producerEndpoint);
      }
    } else if (result === "full") {
      this.unsent.push([kind, id, segment, value]);
    } else if (kind === ReturnKind.RECYCLE) {
      this.memory.returnLoan(segment);
    }
  }

  private flushUnsent(): void {
    let sent = false;
    while (this.unsent.length > 0) {
      const [kind, id, segment, value] = this.unsent[0] as [number, number, number, number];
      const result = this.producerLost ? "closed" : this.queue.pushReturn(kind, id, segment, value);
      if (result === "full") break;
      this.unsent.shift();
      if (result === "closed" && kind === ReturnKind.RECYCLE) this.memory.returnLoan(segment);
      sent ||= result === "pushed";
    }
    // Whatever waited for room: the producer reads it now.
    if (sent) this.doorbell.ring(this.queue.producerThread, this.queue.producerEndpoint);
  }

  getAvailabilityAndBacklog(numCreditsAvailable: number): AvailabilityWithBacklog {
    const head = this.released ? undefined : this.peekHead();
    const backlog = this.queue.getBacklog();
    if (head === undefined) return { isAvailable: false, backlog };
    return {
      isAvailable: numCreditsAvailable > 0 || !isBufferType(head.dataType),
      backlog,
    };
  }

  notifyDataAvailable(): void {
    this.listener.notifyDataAvailable(this);
  }

  resumeConsumption(): void {
    this.sendReturn(ReturnKind.RESUME, 0, 0, 0);
  }

  acknowledgeAllDataProcessed(): void {
    this.sendReturn(ReturnKind.ACK_ALL, 0, 0, 0);
  }

  notifyNewBufferSize(newBufferSize: number): void {
    this.sendReturn(ReturnKind.BUFFER_SIZE, 0, 0, newBufferSize);
  }

  /**
   * Releases the view: what is still queued goes back unread, and the producer learns that the
   * subpartition is consumed. Buffers the consumer still holds go back as they are recycled.
   */
  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    this.drainQueue();
    this.sendReturn(ReturnKind.RELEASE, 0, 0, 0);
    this.disposeWhenDone();
  }

  /** Returns every record left in the ring unread. */
  private drainQueue(): void {
    if (this.producerLost) return;
    for (let record = this.queue.peek(); record !== undefined; record = this.queue.peek()) {
      if (record.kind === RecordKind.REF) {
        this.sendReturn(ReturnKind.RECYCLE, record.id, record.segmentOrBytes, 0);
      }
      this.popRecord(isBufferType(record.dataType));
    }
  }

  /**
   * The producer's thread died with `cause`: the view fails with it. Returns it published and
   * that thread never read, the records still queued, and the buffers this consumer holds (as
   * they are recycled) give their loans back to the shared memory; the dead thread's segments
   * are free once their last loan is back.
   */
  onProducerLost(cause: Error): void {
    if (this.producerLost) return;
    this.failure ??= cause;
    this.queue.closeReturns((entry) => {
      if (entry.kind === ReturnKind.RECYCLE) this.memory.returnLoan(entry.segment);
    });
    for (const [kind, , segment] of this.unsent.splice(0)) {
      if (kind === ReturnKind.RECYCLE) this.memory.returnLoan(segment);
    }
    for (let record = this.queue.peek(); record !== undefined; record = this.queue.peek()) {
      if (record.kind === RecordKind.REF) this.memory.returnLoan(record.segmentOrBytes);
      this.queue.pop(false);
    }
    this.producerLost = true;
    if (!this.released) this.listener.notifyDataAvailable(this);
    this.disposeWhenDone();
  }

  isReleased(): boolean {
    return this.released || this.producerLost || this.queue.isReleasedByProducer();
  }

  getFailureCause(): Error | undefined {
    if (this.failure === undefined && this.queue.isReleasedByProducer()) {
      this.failure = decodeReleaseCause(this.queue.releaseCause());
    }
    return this.failure;
  }

  getNumberOfQueuedBuffers(): number {
    return this.released || this.producerLost ? 0 : this.queue.getBacklog();
  }

  /** Buffers of the producer this consumer holds now (for tests). */
  getNumberOfHeldBuffers(): number {
    return this.lentOut;
  }

  private disposeWhenDone(): void {
    if (this.disposed) return;
    if ((this.released || this.producerLost) && this.lentOut === 0 && this.unsent.length === 0) {
      this.disposed = true;
      this.doorbell.unregister(this.endpoint);
      this.onDisposed(this);
    }
  }

  toString(): string {
    return `CrossThreadSubpartitionView(from thread ${this.queue.producerThread})`;
  }
}
