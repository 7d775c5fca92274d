import path from "node:path";
import { type ExecutionAttemptID, type JobID, type JobVertexID, SnapshotType } from "@sluice/core";
import type { TaskCheckpointMetrics } from "../../messages/checkpoint-metrics.js";
import { isSavepoint } from "../../messages/checkpoint-trigger-options.js";
import type { FileStateHandle } from "../../messages/file-state-handle.js";

/** One subtask's part of a checkpoint, as its acknowledgement reported it. */
export interface SubtaskCheckpointState {
  /** The subtask's vertex. */
  readonly vertexId: JobVertexID;
  /** The vertex's name. */
  readonly vertexName: string;
  /** The subtask. */
  readonly subtaskIndex: number;
  /** The attempt that took the snapshot. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** Its snapshot; absent when it stored no state. */
  readonly stateHandle?: FileStateHandle;
  /** Its figures: alignment, start delay, snapshot durations. */
  readonly metrics: TaskCheckpointMetrics;
}

/** A subtask that had finished when a checkpoint was triggered. */
export interface FinishedSubtask {
  readonly vertexId: JobVertexID;
  readonly subtaskIndex: number;
}

/**
 * A vertex of the job a checkpoint was taken of, as `_metadata` records it (Flink's
 * `OperatorState` parallelism and max parallelism): a restore at another parallelism needs
 * both.
 */
export interface CheckpointedVertex {
  /** The vertex (in the restoring job: the vertex of the same name). */
  readonly vertexId: JobVertexID;
  /** Its name, which a restore matches vertices by. */
  readonly vertexName: string;
  /** The vertex's parallelism when the checkpoint was taken. */
  readonly parallelism: number;
  /** Its max parallelism (number of key groups). */
  readonly maxParallelism: number;
}

/** What a {@link CompletedCheckpoint} is, besides its tasks' parts. */
export interface CompletedCheckpointProperties {
  /** The subtasks that had finished when it was triggered (default none). */
  readonly finishedSubtasks?: readonly FinishedSubtask[];
  /** A checkpoint (default) or a savepoint, and which kind. */
  readonly snapshotType?: SnapshotType;
  /** The job that took it (absent: not known, the restoring job's own). */
  readonly jobId?: JobID;
  /** The job's vertices when it was taken (absent in checkpoints of earlier releases). */
  readonly vertices?: readonly CheckpointedVertex[];
  /**
   * Whether the job may delete it once it is no longer retained or the job ends (Flink's
   * `discardOnSubsumed`). Default: true for a checkpoint, false for a savepoint. A checkpoint
   * the job was started from by path (a savepoint, another job's retained checkpoint) is never
   * deleted by the job (Flink's NO_CLAIM restore mode).
   */
  readonly discardable?: boolean;
}

/**
 * A checkpoint every task acknowledged and whose `_metadata` file is written (Flink's
 * CompletedCheckpoint): a consistent cut of the whole job that a restart restores from. A
 * savepoint is one too, taken on request into a folder of its own; the job never restores or
 * deletes it by itself.
 */
export class CompletedCheckpoint {
  /** The checkpoint id. */
  readonly checkpointId: bigint;
  /** When it was triggered (ms since the epoch). */
  readonly timestamp: number;
  /** When it completed (ms since the epoch). */
  readonly completedAt: number;
  /** The `_metadata` file. */
  readonly metadataPath: string;
  /** Every subtask's part, in the order they acknowledged. */
  readonly subtaskStates: readonly SubtaskCheckpointState[];
  /**
   * The subtasks that had finished when the checkpoint was triggered (FLIP-147's fully finished
   * tasks): a restart from it deploys them finished, so they do not run again.
   */
  readonly finishedSubtasks: readonly FinishedSubtask[];
  /** A checkpoint or a savepoint (`SAVEPOINT`, `SAVEPOINT_SUSPEND`, `SAVEPOINT_TERMINATE`). */
  readonly snapshotType: SnapshotType;
  /** The job that took it; `undefined` when not known. */
  readonly jobId: JobID | undefined;
  /** The job's vertices when it was taken; empty for a checkpoint of an earlier release. */
  readonly vertices: readonly CheckpointedVertex[];
  /** Whether the job that holds it may delete it (see {@link CompletedCheckpointProperties}). */
  readonly discardable: boolean;

  constructor(
    checkpointId: bigint,
    timestamp: number,
    completedAt: number,
    metadataPath: string,
    subtaskStates: readonly SubtaskCheckpointState[],
    properties: CompletedCheckpointProperties = {},
  ) {
    this.checkpointId = checkpointId;
    this.timestamp = timestamp;
    this.completedAt = completedAt;
    this.metadataPath = metadataPath;
    this.subtaskStates = Object.freeze([...subtaskStates]);
    this.finishedSubtasks = Object.freeze([...(properties.finishedSubtasks ?? [])]);
    this.snapshotType = properties.snapshotType ?? SnapshotType.CHECKPOINT;
    this.jobId = properties.jobId;
    this.vertices = Object.freeze([...(properties.vertices ?? [])]);
    this.discardable = properties.discardable ?? !isSavepoint(this.snapshotType);
  }

  /** Whether it is a savepoint. */
  get isSavepoint(): boolean {
    return isSavepoint(this.snapshotType);
  }

  /** The folder that holds its `_metadata` (a savepoint's own folder). */
  get externalPointer(): string {
    return path.dirname(this.metadataPath);
  }

  /** Whether subtask `subtaskIndex` of `vertexId` had finished when it was triggered. */
  isFinished(vertexId: JobVertexID, subtaskIndex: number): boolean {
    return this.finishedSubtasks.some(
      (task) => task.subtaskIndex === subtaskIndex && task.vertexId.equals(vertexId),
    );
  }

  /** The part of subtask `subtaskIndex` of `vertexId`, if it took part. */
  stateOf(vertexId: JobVertexID, subtaskIndex: number): SubtaskCheckpointState | undefined {
    return this.subtaskStates.find(
      (state) => state.subtaskIndex === subtaskIndex && state.vertexId.equals(vertexId),
    );
  }

  /** Milliseconds from the trigger to completion (Flink's end-to-end duration). */
  get durationMillis(): number {
    return this.completedAt - this.timestamp;
  }

  /** The longest alignment of any subtask (Flink's `checkpointAlignmentTime`, its maximum). */
  get alignmentDurationNanos(): number {
    return Math.max(0, ...this.subtaskStates.map((s) => s.metrics.alignmentDurationNanos));
  }

  /** The longest start delay of any subtask (Flink's `checkpointStartDelayNanos`, maximum). */
  get checkpointStartDelayNanos(): number {
    return Math.max(0, ...this.subtaskStates.map((s) => s.metrics.checkpointStartDelayNanos));
  }

  /** Bytes all subtasks processed while aligning. */
  get bytesProcessedDuringAlignment(): number {
    return this.subtaskStates.reduce((sum, s) => sum + s.metrics.bytesProcessedDuringAlignment, 0);
  }

  /** Bytes of in-flight data all subtasks stored as channel state (unaligned checkpoints). */
  get persistedDataBytes(): number {
    return this.subtaskStates.reduce((sum, s) => sum + (s.metrics.persistedDataBytes ?? 0), 0);
  }

  /** Bytes of all snapshot files. */
  get stateSize(): number {
    return this.subtaskStates.reduce((sum, s) => sum + (s.stateHandle?.size ?? 0), 0);
  }
}
