/**
 * The output-side alignment timers of one result partition: one per checkpoint whose timeoutable
 * aligned barrier is still queued in a subpartition. When one fires, those barriers turn
 * unaligned. A timer is cleared once every subpartition sent its barrier, when the checkpoint is
 * aborted, and when the partition is released.
 */
export class AlignmentTimers {
  private readonly timers = new Map<bigint, ReturnType<typeof setTimeout>>();

  /** True while the timer of `checkpointId` runs. */
  has(checkpointId: bigint): boolean {
    return this.timers.has(checkpointId);
  }

  /** Starts the timer of `checkpointId`, due at `deadline` (epoch ms), unless one runs. */
  start(checkpointId: bigint, deadline: number, onTimeout: () => void): void {
    if (this.timers.has(checkpointId)) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(checkpointId);
        onTimeout();
      },
      Math.max(0, deadline - Date.now()),
    );
    // A barrier still queued must not keep the process alive on its own.
    timer.unref();
    this.timers.set(checkpointId, timer);
  }

  /** Stops the timer of `checkpointId`, if it runs. */
  clear(checkpointId: bigint): void {
    clearTimeout(this.timers.get(checkpointId));
    this.timers.delete(checkpointId);
  }

  /** Stops every timer (the partition is released). */
  clearAll(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  /** The checkpoints whose timer runs. */
  pending(): bigint[] {
    return [...this.timers.keys()];
  }
}
