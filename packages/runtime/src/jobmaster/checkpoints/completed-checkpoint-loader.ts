import { stat } from "node:fs/promises";
import path from "node:path";
import { ExecutionAttemptID, JobID, type JobVertexID, SnapshotType } from "@sluice/core";
import type { JsonObject } from "@sluice/runtime-api";
import { CheckpointError } from "../../checkpointing/checkpoint-error.js";
import {
  FsCheckpointStorage,
  METADATA_FILE_NAME,
} from "../../checkpointing/fs-checkpoint-storage.js";
import type { TaskCheckpointMetrics } from "../../messages/checkpoint-metrics.js";
import { snapshotTypeOf } from "../../messages/checkpoint-trigger-options.js";
import { StateAssignmentError } from "../../state/state-assignment-error.js";
import type { JobGraph } from "../job-graph.js";
import {
  type CheckpointedVertex,
  CompletedCheckpoint,
  type FinishedSubtask,
  type SubtaskCheckpointState,
} from "./completed-checkpoint.js";

/**
 * How a job is restored from a savepoint or a retained checkpoint named by path (Flink's
 * `SavepointRestoreSettings`, `sluice run --fromSavepoint`).
 */
export interface SavepointRestoreSettings {
  /**
   * The savepoint's (or retained checkpoint's) folder, or its `_metadata` file.
   */
  readonly path: string;
  /**
   * Whether state of a vertex the job no longer has is skipped (Flink's
   * `--allowNonRestoredState`); default false: such state fails the restore.
   */
  readonly allowNonRestoredState?: boolean;
}

/**
 * Reads a completed checkpoint back from its `_metadata` file, for a job manager that restores a
 * job another one ran (after a failover, Flink's recovery from the `CompletedCheckpointStore`).
 * `graph` is the job rebuilt by the new leader: it must have the checkpoint's job id, and each
 * subtask's state goes to the vertex of the same name (a rebuilt graph has new vertex ids; names
 * play the part of Flink's operator uids).
 *
 * @throws CheckpointError naming the file when it is missing, damaged, of another job, or names a
 *   vertex `graph` does not have.
 */
export async function loadCompletedCheckpoint(
  metadataPath: string,
  graph: JobGraph,
): Promise<CompletedCheckpoint> {
  const metadata = await FsCheckpointStorage.readMetadata(metadataPath);
  const what = `the checkpoint metadata ${metadataPath}`;
  if (metadata.jobId !== graph.jobId.toString()) {
    throw new CheckpointError(
      `${what} belongs to job ${String(metadata.jobId)}, not to job ${graph.jobId} (${graph.name})`,
    );
  }
  return checkpointOf(metadataPath, metadata, graph, {
    missingVertex: (vertexName, part) => {
      throw new CheckpointError(
        `${what} has ${part} of vertex ${vertexName}, which job ${graph.name} lacks`,
      );
    },
  });
}

/**
 * Reads a savepoint, or a checkpoint another run of a job retained, for a new job `graph` to
 * start from (Flink's `CheckpointCoordinator.restoreSavepoint`): `settings.path` is its folder or
 * its `_metadata` file, and it may be of any job. Each subtask's state goes to the vertex of the
 * same name, which may run at another parallelism now (see `redistributeTaskState`). The job
 * never deletes what it was started from (Flink's NO_CLAIM mode), and its checkpoint ids continue
 * after it.
 *
 * @throws CheckpointError naming the file when it is missing or damaged; StateAssignmentError
 *   naming the vertex when the savepoint holds state of a vertex `graph` lacks, unless
 *   `allowNonRestoredState` skips it.
 */
export async function loadSavepoint(
  settings: SavepointRestoreSettings,
  graph: JobGraph,
): Promise<CompletedCheckpoint> {
  const metadataPath = await resolveMetadataPath(settings.path);
  const metadata = await FsCheckpointStorage.readMetadata(metadataPath);
  return checkpointOf(metadataPath, metadata, graph, {
    discardable: false,
    missingVertex: (vertexName, part) => {
      if (settings.allowNonRestoredState === true) return undefined;
      throw new StateAssignmentError(
        `cannot restore job ${graph.name} from ${settings.path}: it holds ${part} of vertex "${vertexName}", which the job does not have (vertices are matched by name). Restore with allowNonRestoredState (sluice run --allowNonRestoredState) to skip that state`,
      );
    },
  });
}

/** A folder's `_metadata`, or the file named. */
async function resolveMetadataPath(pointer: string): Promise<string> {
  const resolved = path.resolve(pointer);
  try {
    if ((await stat(resolved)).isDirectory()) return path.join(resolved, METADATA_FILE_NAME);
  } catch (error) {
    throw new CheckpointError(
      `cannot restore from ${pointer}: ${(error as Error).message} (name a savepoint's or retained checkpoint's folder, or its ${METADATA_FILE_NAME} file)`,
      { cause: error },
    );
  }
  return resolved;
}

interface LoadPolicy {
  /** Whether the loaded checkpoint may be deleted by the job (default: as its type says). */
  readonly discardable?: boolean;
  /**
   * A part of a vertex `graph` lacks: throws, or returns `undefined` to skip the part.
   */
  readonly missingVertex: (vertexName: string, part: string) => undefined;
}

function checkpointOf(
  metadataPath: string,
  metadata: JsonObject,
  graph: JobGraph,
  policy: LoadPolicy,
): CompletedCheckpoint {
  const what = `the checkpoint metadata ${metadataPath}`;
  const id = metadata.checkpointId;
  const timestamp = metadata.timestamp;
  if (typeof id !== "string" || !/^\d+$/.test(id) || typeof timestamp !== "number") {
    throw new CheckpointError(`${what} has no checkpoint id or timestamp`);
  }
  const typeName = metadata.snapshotType;
  const snapshotType =
    typeName === undefined ? SnapshotType.CHECKPOINT : snapshotTypeOf(String(typeName));
  if (snapshotType === undefined) {
    throw new CheckpointError(`${what} has an unknown snapshot type ${JSON.stringify(typeName)}`);
  }
  let jobId: JobID | undefined;
  try {
    jobId = JobID.fromHex(String(metadata.jobId));
  } catch {
    throw new CheckpointError(`${what} names no valid job id (${JSON.stringify(metadata.jobId)})`);
  }
  const idsByName = new Map<string, JobVertexID>(graph.vertices.map((v) => [v.name, v.id]));
  const folder = path.dirname(metadataPath);
  const states: SubtaskCheckpointState[] = [];
  for (const entry of Array.isArray(metadata.tasks) ? metadata.tasks : []) {
    const task = entry as JsonObject;
    const vertexName = String(task.vertexName);
    const vertexId = idsByName.get(vertexName) ?? policy.missingVertex(vertexName, "state");
    if (vertexId === undefined) continue;
    const handle = task.stateHandle as { path?: unknown; size?: unknown } | null;
    states.push({
      vertexId,
      vertexName,
      subtaskIndex: Number(task.subtaskIndex),
      executionAttemptId: ExecutionAttemptID.parse(String(task.executionAttemptId)),
      ...(handle === null || typeof handle?.path !== "string"
        ? {}
        : // A savepoint names its files relative to its folder, which may have moved.
          { stateHandle: { path: path.resolve(folder, handle.path), size: Number(handle.size) } }),
      metrics: task.metrics as unknown as TaskCheckpointMetrics,
    });
  }
  // Subtasks finished when it was taken (FLIP-147) have no state: restored as finished, not
  // run again (a source would emit everything a second time).
  const finishedSubtasks: FinishedSubtask[] = [];
  for (const entry of Array.isArray(metadata.finishedTasks) ? metadata.finishedTasks : []) {
    const task = entry as JsonObject;
    const vertexName = String(task.vertexName);
    const vertexId =
      idsByName.get(vertexName) ?? policy.missingVertex(vertexName, "a finished subtask");
    if (vertexId === undefined) continue;
    finishedSubtasks.push({ vertexId, subtaskIndex: Number(task.subtaskIndex) });
  }
  const vertices: CheckpointedVertex[] = [];
  for (const entry of Array.isArray(metadata.vertices) ? metadata.vertices : []) {
    const vertex = entry as JsonObject;
    const vertexId = idsByName.get(String(vertex.vertexName));
    // A vertex without state needs no mapping: nothing of it is restored.
    if (vertexId === undefined) continue;
    vertices.push({
      vertexId,
      vertexName: String(vertex.vertexName),
      parallelism: Number(vertex.parallelism),
      maxParallelism: Number(vertex.maxParallelism),
    });
  }
  return new CompletedCheckpoint(BigInt(id), timestamp, timestamp, metadataPath, states, {
    finishedSubtasks,
    snapshotType,
    jobId,
    vertices,
    ...(policy.discardable === undefined ? {} : { discardable: policy.discardable }),
  });
}
