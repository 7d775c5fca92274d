import { IllegalArgumentError } from "@sluice/core";
import type { JsonValue } from "../descriptors/json-fields.js";

/**
 * What the completed-checkpoint store keeps of one checkpoint: enough for a new leader to restore
 * the job from it (Flink keeps the serialized `CompletedCheckpoint`; the state itself stays under
 * `state.checkpoints.dir`).
 */
export interface StoredCompletedCheckpoint {
  /** The checkpoint id. */
  readonly checkpointId: bigint;
  /** When it was triggered (ms since the epoch). */
  readonly timestamp: number;
  /** The checkpoint's `_metadata` file: what a restore reads. */
  readonly externalPointer: string;
  /** Anything else the job side wants back at recovery (JSON). */
  readonly details?: JsonValue;
}

/**
 * The latest completed checkpoints of one job (Flink's `CompletedCheckpointStore`), kept where a
 * new leader finds them. Writes are fenced: only the current leader's succeed.
 */
export interface CompletedCheckpointStore {
  /** How many checkpoints it keeps (`state.checkpoints.num-retained`). */
  readonly maxNumberOfRetainedCheckpoints: number;
  /**
   * Adds `checkpoint` and drops the oldest beyond {@link maxNumberOfRetainedCheckpoints}; resolves
   * with the dropped ones (their state may be discarded now).
   *
   * @throws FencingTokenError when this job manager is not the current leader (nothing added).
   * @throws IllegalArgumentError when its id is not above every stored one.
   */
  addCheckpoint(
    checkpoint: StoredCompletedCheckpoint,
  ): Promise<readonly StoredCompletedCheckpoint[]>;
  /** The checkpoint with the highest id, or `undefined` when there is none. */
  getLatestCheckpoint(): Promise<StoredCompletedCheckpoint | undefined>;
  /**
   * Every retained checkpoint, oldest first.
   *
   * @throws HighAvailabilityStateError when a pointer names a missing or damaged record.
   */
  getAllCheckpoints(): Promise<readonly StoredCompletedCheckpoint[]>;
  /**
   * The job ended: when `discard` (it reached a globally terminal state), removes every
   * checkpoint of it; otherwise keeps them for the next leader.
   *
   * @throws FencingTokenError when discarding and this job manager is not the current leader.
   */
  shutdown(discard: boolean): Promise<void>;
}

/**
 * Checks the retained number a {@link CompletedCheckpointStore} is created with, for
 * `HighAvailabilityServices.createCompletedCheckpointStore` implementations; returns it.
 *
 * @throws IllegalArgumentError when it is not an integer of at least 1.
 */
export function checkMaxRetainedCheckpoints(maxNumberOfRetainedCheckpoints: number): number {
  if (!Number.isInteger(maxNumberOfRetainedCheckpoints) || maxNumberOfRetainedCheckpoints < 1) {
    throw new IllegalArgumentError(
      `the completed-checkpoint store keeps at least 1 checkpoint, got ${maxNumberOfRetainedCheckpoints}`,
    );
  }
  return maxNumberOfRetainedCheckpoints;
}
