import type { CancelCheckpointMarker, CheckpointBarrier, RuntimeEvent } from "@sluice/core";
import type { InputGate } from "@sluice/runtime-api";

/** What a barrier handler reports to the task. */
export interface CheckpointListener {
  /** Every input channel delivered the barrier of this checkpoint: snapshot the task's state now. */
  triggerCheckpoint(barrier: CheckpointBarrier): void;
  /** The checkpoint will not complete (cancel marker, or a newer barrier overtook it). */
  abortCheckpoint?(checkpointId: bigint, reason: string): void;
}

/**
 * Handles the checkpoint events of one input gate (Flink's CheckpointedInputGate with its
 * barrier handler). Plug it into a RecordReader: `onEvent` and `onEndOfPartition` forward to
 * {@link handleEvent} and {@link handleEndOfPartition}.
 */
export interface CheckpointBarrierHandler {
  /** Returns true when the event was a checkpoint event and was handled. */
  handleEvent(event: RuntimeEvent, channelIndex: number): boolean;
  /** A channel ended: it will deliver no barrier any more. */
  handleEndOfPartition(channelIndex: number): void;
  /** The checkpoint being aligned, if any. */
  readonly pendingCheckpointId: bigint | undefined;
}

/**
 * Exactly-once alignment (Flink's aligned SingleCheckpointBarrierHandler). An aligned barrier
 * blocks its subpartition at the producer, so a channel that delivered the barrier sends nothing
 * more until it is resumed; once every open channel delivered the barrier, the checkpoint is
 * triggered and every channel resumed. A cancel marker, a newer barrier or the end of a channel
 * resolve a pending alignment.
 */
export class AlignedCheckpointBarrierHandler implements CheckpointBarrierHandler {
  private readonly gate: InputGate;
  private readonly listener: CheckpointListener;
  private readonly blocked = new Set<number>();
  private readonly ended = new Set<number>();
  private current: CheckpointBarrier | undefined;
  private lastCompletedId = -1n;

  constructor(gate: InputGate, listener: CheckpointListener) {
    this.gate = gate;
    this.listener = listener;
  }

  get pendingCheckpointId(): bigint | undefined {
    return this.current?.id;
  }

  handleEvent(event: RuntimeEvent, channelIndex: number): boolean {
    if (event.kind === "CheckpointBarrier") {
      this.onBarrier(event, channelIndex);
      return true;
    }
    if (event.kind === "CancelCheckpointMarker") {
      this.onCancel(event);
      return true;
    }
    return false;
  }

  handleEndOfPartition(channelIndex: number): void {
    this.ended.add(channelIndex);
    this.blocked.delete(channelIndex);
    this.completeIfAligned();
  }

  private onBarrier(barrier: CheckpointBarrier, channelIndex: number): void {
    if (barrier.id <= this.lastCompletedId) {
      // A late barrier of a finished or aborted checkpoint: let the channel continue.
      this.gate.resumeConsumption(channelIndex);
      return;
    }
    if (this.current !== undefined && barrier.id > this.current.id) {
      // A newer checkpoint overtook the one being aligned: abort it, start over.
      this.abort(`checkpoint ${barrier.id} started before ${this.current.id} was aligned`);
    }
    this.current ??= barrier;
    this.blocked.add(channelIndex);
    this.completeIfAligned();
  }

  private onCancel(marker: CancelCheckpointMarker): void {
    if (this.current !== undefined && marker.checkpointId === this.current.id) {
      this.abort(`checkpoint ${marker.checkpointId} was cancelled upstream`);
    } else if (marker.checkpointId > this.lastCompletedId && this.current === undefined) {
      this.lastCompletedId = marker.checkpointId;
      this.listener.abortCheckpoint?.(marker.checkpointId, "cancelled upstream before alignment");
    }
  }

  private completeIfAligned(): void {
    const barrier = this.current;
    if (barrier === undefined) return;
    if (this.blocked.size + this.ended.size < this.gate.numberOfInputChannels) return;
    this.current = undefined;
    this.lastCompletedId = barrier.id;
    this.listener.triggerCheckpoint(barrier);
    this.resumeBlocked();
  }

  private abort(reason: string): void {
    const barrier = this.current;
    if (barrier === undefined) return;
    this.current = undefined;
    this.lastCompletedId = barrier.id;
    this.listener.abortCheckpoint?.(barrier.id, reason);
    this.resumeBlocked();
  }

  private resumeBlocked(): void {
    for (const channel of this.blocked) this.gate.resumeConsumption(channel);
    this.blocked.clear();
  }
}

/**
 * At-least-once tracking (Flink's CheckpointBarrierTracker): never blocks a channel; counts the
 * barriers of each checkpoint and triggers once every open channel delivered it. Barriers must
 * be sent with `CheckpointAlignment.AT_LEAST_ONCE`, which does not block the producer.
 */
export class CheckpointBarrierTracker implements CheckpointBarrierHandler {
  private readonly gate: InputGate;
  private readonly listener: CheckpointListener;
  private readonly seen = new Map<bigint, Set<number>>();
  private readonly ended = new Set<number>();
  private lastCompletedId = -1n;

  constructor(gate: InputGate, listener: CheckpointListener) {
    this.gate = gate;
    this.listener = listener;
  }

  get pendingCheckpointId(): bigint | undefined {
    let oldest: bigint | undefined;
    for (const id of this.seen.keys()) if (oldest === undefined || id < oldest) oldest = id;
    return oldest;
  }

  handleEvent(event: RuntimeEvent, channelIndex: number): boolean {
    if (event.kind === "CancelCheckpointMarker") {
      if (this.seen.delete(event.checkpointId)) {
        this.listener.abortCheckpoint?.(event.checkpointId, "cancelled upstream");
      }
      return true;
    }
    if (event.kind !== "CheckpointBarrier") return false;
    if (event.id <= this.lastCompletedId) return true;
    let channels = this.seen.get(event.id);
    if (channels === undefined) {
      channels = new Set();
      this.seen.set(event.id, channels);
    }
    channels.add(channelIndex);
    this.completeReady(event);
    return true;
  }

  handleEndOfPartition(channelIndex: number): void {
    this.ended.add(channelIndex);
  }

  private completeReady(barrier: CheckpointBarrier): void {
    const channels = this.seen.get(barrier.id);
    if (channels === undefined) return;
    const open = this.gate.numberOfInputChannels - this.ended.size;
    if (channels.size < open) return;
    // Checkpoints complete in order; older incomplete ones are subsumed (Flink's behaviour).
    for (const id of [...this.seen.keys()]) {
      if (id < barrier.id) {
        this.seen.delete(id);
        this.listener.abortCheckpoint?.(id, `subsumed by checkpoint ${barrier.id}`);
      }
    }
    this.seen.delete(barrier.id);
    this.lastCompletedId = barrier.id;
    this.listener.triggerCheckpoint(barrier);
  }
}
