import type { BufferAndBacklog } from "./buffer-and-backlog.js";
import type { BufferAvailabilityListener } from "./buffer-availability-listener.js";
import type { PipelinedSubpartition } from "./pipelined-subpartition.js";
import type {
  AvailabilityWithBacklog,
  ResultSubpartitionView,
} from "./result-subpartition-view.js";

/** The one reader view of a PipelinedSubpartition (Flink's PipelinedSubpartitionView). */
export class PipelinedSubpartitionView implements ResultSubpartitionView {
  private readonly parent: PipelinedSubpartition;
  private readonly listener: BufferAvailabilityListener;
  private released = false;

  constructor(parent: PipelinedSubpartition, listener: BufferAvailabilityListener) {
    this.parent = parent;
    this.listener = listener;
  }

  getNextBuffer(): BufferAndBacklog | undefined {
    if (this.released) return undefined;
    return this.parent.pollBuffer();
  }

  getAvailabilityAndBacklog(numCreditsAvailable: number): AvailabilityWithBacklog {
    return this.parent.getAvailabilityAndBacklog(numCreditsAvailable);
  }

  /** Whether the reader is a remote channel without exclusive buffers (floating-only mode). */
  receiverHasNoExclusiveBuffers(): boolean {
    return this.listener.initialCredit === 0;
  }

  notifyDataAvailable(): void {
    this.listener.notifyDataAvailable(this);
  }

  notifyPriorityEvent(prioritySequenceNumber: number): void {
    this.listener.notifyPriorityEvent?.(prioritySequenceNumber);
  }

  resumeConsumption(): void {
    this.parent.resumeConsumption();
  }

  acknowledgeAllDataProcessed(): void {
    if (!this.released) this.parent.acknowledgeAllDataProcessed();
  }

  releaseAllResources(): void {
    if (this.released) return;
    this.released = true;
    this.parent.onConsumedSubpartition();
  }

  /** Released by the consumer, or because the subpartition itself was released. */
  isReleased(): boolean {
    return this.released || this.parent.isReleased();
  }

  getFailureCause(): Error | undefined {
    return this.parent.getFailureCause();
  }

  getNumberOfQueuedBuffers(): number {
    return this.parent.getNumberOfQueuedBuffers();
  }

  notifyNewBufferSize(newBufferSize: number): void {
    this.parent.setBufferSize(newBufferSize);
  }

  toString(): string {
    return `PipelinedSubpartitionView(${this.parent})`;
  }
}
