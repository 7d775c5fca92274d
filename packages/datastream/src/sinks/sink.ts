import type { JsonValue } from "@sluice/runtime";
import type { RuntimeContext } from "../functions.js";

/** What a {@link Sink} is told when a task creates its writer. */
export interface SinkContext extends RuntimeContext {
  /** The sink's operator id (its `uid`), unique within the job. */
  readonly uid: string;
  /** Whether the job takes checkpoints: a transactional sink commits at checkpoints, else at the end. */
  readonly checkpointing: boolean;
}

/**
 * One subtask's writer of a {@link Sink} (Flink's `SinkWriter`): `write` gets every record; the
 * optional hooks take part in checkpoints as a two-phase-commit sink does (pre-commit in
 * `snapshotState` / `persistSnapshot`, commit in `notifyCheckpointComplete`).
 */
export interface SinkWriter<T> {
  /** Restores the writer from its part of the restored checkpoint (undefined: a fresh start). */
  readonly open?: (restored: JsonValue | undefined) => void | Promise<void>;
  /** Writes one record. */
  readonly write: (value: T) => void;
  /** The input ended. */
  readonly endInput?: () => void | Promise<void>;
  /** The writer's state for a checkpoint, taken between two records. */
  readonly snapshotState?: (checkpointId: bigint) => JsonValue | undefined;
  /** The asynchronous part of the snapshot (a pre-commit). */
  readonly persistSnapshot?: (checkpointId: bigint) => Promise<void>;
  /** A checkpoint completed (commit what it pre-committed). */
  readonly notifyCheckpointComplete?: (checkpointId: bigint) => void | Promise<void>;
  /** The task failed or was canceled (abort what is open). */
  readonly close?: () => Promise<void>;
  /** What the writer adds to its task's result. */
  readonly result?: () => JsonValue | undefined;
}

/** Where a stream's records end (Flink's `Sink`): `stream.sinkTo(sink)`. */
export interface Sink<T> {
  /** The operator's name in the job (`File Sink` shows as `Sink: File Sink`). */
  readonly name: string;
  /** Creates the writer of one subtask. */
  readonly createWriter: (context: SinkContext) => SinkWriter<T>;
}
