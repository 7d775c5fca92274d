import type { JsonValue } from "@sluice/runtime-api";

/**
 * How a task's code takes part in checkpoints (Flink's CheckpointedFunction): it registers one
 * with `task.setCheckpointHandler(handler)` and reads what it stored last time from
 * `task.restoredState` when it is restarted.
 *
 * ```ts
 * // A source: its state is the offset of the next record.
 * let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
 * task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
 *
 * // A counter: its state is its map.
 * const counts: Record<string, number> = { ...(task.restoredState as object | undefined) };
 * task.setCheckpointHandler({ snapshotState: () => counts });
 * ```
 */
export interface CheckpointHandler {
  /**
   * Returns the task's state for checkpoint `checkpointId`. Called synchronously at the exact
   * point of the checkpoint: for a task with inputs, inside its reader's poll, after the last
   * record before the barrier and before the first one after it; for a source, inside
   * `task.processMail()` / `task.yieldToMailbox()`. The state must reflect exactly the records
   * processed (or, for a source, emitted) so far.
   *
   * The value is serialized with `JSON.stringify` before this call returns, so the task may
   * keep changing the object it returned. Return `undefined` when there is nothing to store.
   * A throw (or a value that is not JSON, e.g. a bigint) declines the checkpoint.
   */
  snapshotState(checkpointId: bigint): JsonValue | undefined;

  /**
   * The asynchronous part of the snapshot of checkpoint `checkpointId`, started right after
   * {@link snapshotState} returned (Flink's asynchronous snapshot phase): the task acknowledges
   * the checkpoint only once the promise resolved, so the checkpoint cannot complete before, and
   * a rejection declines it. A two-phase-commit sink writes and syncs its pre-committed
   * transaction here. Optional.
   */
  persistSnapshot?(checkpointId: bigint): Promise<void>;
}
