import path from "node:path";
import { type ExecutionAttemptID, type JobID, type JobVertexID, SnapshotType } from "@sluice/core";
import type { JsonObject } from "@sluice/runtime-api";
import type { AcknowledgeCheckpoint } from "../../messages/acknowledge-checkpoint.js";
import {
  type CheckpointTriggerOptions,
  isSavepoint,
  isSynchronousSavepoint,
  snapshotTypeName,
} from "../../messages/checkpoint-trigger-options.js";
import type { FileStateHandle } from "../../messages/file-state-handle.js";
import {
  type CheckpointedVertex,
  CompletedCheckpoint,
  type SubtaskCheckpointState,
} from "./completed-checkpoint.js";

/** A subtask a checkpoint waits for: its current attempt and where it belongs in the job. */
export interface TaskToWaitFor {
  readonly executionAttemptId: ExecutionAttemptID;
  readonly vertexId: JobVertexID;
  readonly vertexName: string;
  readonly subtaskIndex: number;
}

/** What {@link PendingCheckpoint.acknowledgeTask} made of an acknowledgement. */
export type TaskAcknowledgeResult = "SUCCESS" | "DUPLICATE" | "UNKNOWN";

/**
 * A checkpoint that was triggered and waits for its acknowledgements (Flink's
 * PendingCheckpoint): it knows which attempts must acknowledge, collects their parts, and turns
 * into a {@link CompletedCheckpoint} once all did and the `_metadata` is written.
 */
export class PendingCheckpoint {
  /** The checkpoint id. */
  readonly checkpointId: bigint;
  /** When it was triggered (ms since the epoch). */
  readonly timestamp: number;
  /** True once it completed or was aborted. */
  disposed = false;
  /** True while its `_metadata` is being written. */
  finalizing = false;
  /** The timer that expires it. */
  timer: NodeJS.Timeout | undefined;
  /** What it is (a checkpoint, a savepoint) and, for a savepoint, its folder. */
  readonly trigger: CheckpointTriggerOptions;

  private readonly notYetAcknowledged: Map<string, TaskToWaitFor>;
  private readonly acknowledged: SubtaskCheckpointState[] = [];
  /** Subtasks that had finished when it was triggered (FLIP-147): restored as finished. */
  private readonly finished: readonly TaskToWaitFor[];
  private readonly vertices: readonly CheckpointedVertex[];
  private readonly jobId: JobID | undefined;

  constructor(
    checkpointId: bigint,
    timestamp: number,
    tasksToWaitFor: readonly TaskToWaitFor[],
    finishedTasks: readonly TaskToWaitFor[] = [],
    properties: {
      readonly trigger?: CheckpointTriggerOptions;
      readonly vertices?: readonly CheckpointedVertex[];
      readonly jobId?: JobID;
    } = {},
  ) {
    this.checkpointId = checkpointId;
    this.timestamp = timestamp;
    this.finished = finishedTasks;
    this.trigger = properties.trigger ?? { snapshotType: SnapshotType.CHECKPOINT };
    this.vertices = properties.vertices ?? [];
    this.jobId = properties.jobId;
    this.notYetAcknowledged = new Map(
      tasksToWaitFor.map((task) => [task.executionAttemptId.toString(), task]),
    );
  }

  /** Whether it is a savepoint. */
  get isSavepoint(): boolean {
    return isSavepoint(this.trigger.snapshotType);
  }

  /** Whether it is the synchronous savepoint of a stop-with-savepoint. */
  get isSynchronous(): boolean {
    return isSynchronousSavepoint(this.trigger.snapshotType);
  }

  /** A savepoint's folder; `undefined` for a checkpoint. */
  get location(): string | undefined {
    return this.trigger.targetLocation;
  }

  /** True once every task acknowledged. */
  isFullyAcknowledged(): boolean {
    return this.notYetAcknowledged.size === 0;
  }

  /** True while `executionAttemptId` still has to acknowledge. */
  isAwaiting(executionAttemptId: ExecutionAttemptID): boolean {
    return this.notYetAcknowledged.has(executionAttemptId.toString());
  }

  /** Number of tasks that acknowledged. */
  get numberOfAcknowledgedTasks(): number {
    return this.acknowledged.length;
  }

  /** Records a task's acknowledgement. */
  acknowledgeTask(ack: AcknowledgeCheckpoint): TaskAcknowledgeResult {
    const key = ack.executionAttemptId.toString();
    const task = this.notYetAcknowledged.get(key);
    if (task === undefined) {
      return this.acknowledged.some((state) => state.executionAttemptId.toString() === key)
        ? "DUPLICATE"
        : "UNKNOWN";
    }
    this.notYetAcknowledged.delete(key);
    this.acknowledged.push({
      vertexId: task.vertexId,
      vertexName: task.vertexName,
      subtaskIndex: task.subtaskIndex,
      executionAttemptId: task.executionAttemptId,
      metrics: ack.metrics,
      ...(ack.stateHandle === undefined ? {} : { stateHandle: ack.stateHandle }),
    });
    return "SUCCESS";
  }

  /** The snapshot files received so far (deleted when the checkpoint is aborted). */
  stateHandles(): FileStateHandle[] {
    return this.acknowledged.flatMap((state) =>
      state.stateHandle === undefined ? [] : [state.stateHandle],
    );
  }

  /**
   * What the `_metadata` file records besides the job and checkpoint ids: the snapshot type,
   * every acknowledged subtask with its snapshot file, the finished subtasks, and the job's
   * vertices with their parallelism and max parallelism. A savepoint names its snapshot files
   * relative to its own folder, so the folder can be moved and restored from elsewhere.
   */
  metadata(): JsonObject {
    const location = this.location;
    return {
      timestamp: this.timestamp,
      snapshotType: snapshotTypeName(this.trigger.snapshotType),
      tasks: this.acknowledged.map((state) => ({
        vertexId: state.vertexId.toString(),
        vertexName: state.vertexName,
        subtaskIndex: state.subtaskIndex,
        executionAttemptId: state.executionAttemptId.toString(),
        stateHandle:
          state.stateHandle === undefined
            ? null
            : {
                path:
                  location === undefined
                    ? state.stateHandle.path
                    : path.relative(location, state.stateHandle.path),
                size: state.stateHandle.size,
              },
        metrics: { ...state.metrics },
      })),
      finishedTasks: this.finished.map((task) => ({
        vertexId: task.vertexId.toString(),
        vertexName: task.vertexName,
        subtaskIndex: task.subtaskIndex,
      })),
      vertices: this.vertices.map((vertex) => ({
        vertexId: vertex.vertexId.toString(),
        vertexName: vertex.vertexName,
        parallelism: vertex.parallelism,
        maxParallelism: vertex.maxParallelism,
      })),
    };
  }

  /** The completed checkpoint, once every task acknowledged and `metadataPath` is written. */
  toCompleted(metadataPath: string, completedAt: number): CompletedCheckpoint {
    return new CompletedCheckpoint(
      this.checkpointId,
      this.timestamp,
      completedAt,
      metadataPath,
      this.acknowledged,
      {
        finishedSubtasks: this.finished.map(({ vertexId, subtaskIndex }) => ({
          vertexId,
          subtaskIndex,
        })),
        snapshotType: this.trigger.snapshotType,
        vertices: this.vertices,
        ...(this.jobId === undefined ? {} : { jobId: this.jobId }),
      },
    );
  }
}
