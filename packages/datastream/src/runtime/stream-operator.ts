import type { JsonValue, KeyedStateBackend } from "@sluice/runtime";
import type { RuntimeContext } from "../functions.js";

/**
 * Where an operator's records go (Flink's `Output`): the next operator of its chain, called
 * directly with the same object (no serialization between chained operators), or a record writer
 * of the task, or several of both. Its members are plain functions (they use no `this`), so an
 * operator may hand them on as they are: a record crosses a chain in one call per operator.
 */
export interface Output<T> {
  /** Passes `value` on to every consumer of the operator's main output. */
  readonly collect: (value: T) => void;
  /** Passes `value` on to every consumer of the side output `tagId`. */
  readonly collectSide: (tagId: string, value: unknown) => void;
}

/** What the task gives an operator it creates (Flink's `StreamOperatorParameters`). */
export interface OperatorContext<O> {
  /** The subtask the operator runs in. */
  readonly runtime: RuntimeContext;
  /** Where its records go. */
  readonly output: Output<O>;
  /** The operator's keyed state, for an operator on a keyed stream. */
  readonly keyedState: KeyedStateBackend<unknown> | undefined;
  /** Whether the job takes checkpoints. */
  readonly checkpointing: boolean;
}

/**
 * An operator as a task runs it (Flink's `StreamOperator` with its checkpoint hooks). Every hook
 * but {@link processElement} is optional. A task calls them in this order: {@link open} once,
 * {@link processElement} per record, {@link endInput} when its input ended, and around them
 * the checkpoint hooks; {@link close} only when the task fails or is canceled.
 */
export interface StreamOperator<I> {
  /** Restores the operator from what its {@link snapshotState} returned (undefined: a fresh start). */
  open?(restored: JsonValue | undefined): void | Promise<void>;
  /**
   * Processes one record (synchronously: the chain's state stays consistent between records).
   * A plain function (it uses no `this`): the operator before it in the chain, or the task's
   * input, calls it as it is, with no wrapper per record.
   */
  readonly processElement: (value: I) => void;
  /** The input ended: no record follows (a bounded job's end). */
  endInput?(): void | Promise<void>;
  /** The operator's own state for checkpoint `checkpointId` (JSON), taken between two records. */
  snapshotState?(checkpointId: bigint): JsonValue | undefined;
  /** The asynchronous part of the snapshot: the checkpoint is acknowledged after it resolved. */
  persistSnapshot?(checkpointId: bigint): Promise<void>;
  /** Checkpoint `checkpointId` completed. */
  notifyCheckpointComplete?(checkpointId: bigint): void | Promise<void>;
  /** Checkpoint `checkpointId` was aborted. */
  notifyCheckpointAborted?(checkpointId: bigint): void | Promise<void>;
  /** The task failed or was canceled: release what the operator holds. */
  close?(): Promise<void>;
  /** What the operator adds to the task's result when the task finishes. */
  result?(): JsonValue | undefined;
}
