import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";

/**
 * The checkpoint a job's last start or restart restored, and when (Flink's
 * `RestoredCheckpointStats`): what the next deployment restores its tasks from and what the
 * checkpoint statistics report.
 */
export class RestoredCheckpoint {
  private restored: CompletedCheckpoint | undefined;
  /** When (ms since the epoch) {@link restored} was restored. */
  private restoredAt: number | undefined;

  /** The restored checkpoint; `undefined` before a restore from a checkpoint. */
  get checkpoint(): CompletedCheckpoint | undefined {
    return this.restored;
  }

  /** The restored checkpoint and when it was restored; `undefined` before a restore. */
  get stats(): { readonly checkpoint: CompletedCheckpoint; readonly at: number } | undefined {
    const checkpoint = this.restored;
    const at = this.restoredAt;
    return checkpoint === undefined || at === undefined ? undefined : { checkpoint, at };
  }

  /**
   * `checkpoint` is restored now; `undefined` (a restart before any checkpoint completed) keeps
   * the earlier one.
   */
  restore(checkpoint: CompletedCheckpoint | undefined): void {
    if (checkpoint === undefined) return;
    this.restored = checkpoint;
    this.restoredAt = Date.now();
  }
}
