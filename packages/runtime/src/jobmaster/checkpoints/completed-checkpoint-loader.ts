import { ExecutionAttemptID, type JobVertexID } from "@sluice/core";
import type { JsonObject } from "@sluice/runtime-api";
import { CheckpointError } from "../../checkpointing/checkpoint-error.js";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";
import type { TaskCheckpointMetrics } from "../../messages/checkpoint-metrics.js";
import type { JobGraph } from "../job-graph.js";
import {
  CompletedCheckpoint,
  type FinishedSubtask,
  type SubtaskCheckpointState,
} from "./completed-checkpoint.js";

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
  const id = metadata.checkpointId;
  const timestamp = metadata.timestamp;
  if (typeof id !== "string" || !/^\d+$/.test(id) || typeof timestamp !== "number") {
    throw new CheckpointError(`${what} has no checkpoint id or timestamp`);
  }
  const idsByName = new Map<string, JobVertexID>(graph.vertices.map((v) => [v.name, v.id]));
  const tasks = Array.isArray(metadata.tasks) ? metadata.tasks : [];
  const vertexIdOf = (vertexName: string, part: string): JobVertexID => {
    const vertexId = idsByName.get(vertexName);
    if (vertexId === undefined) {
      throw new CheckpointError(
        `${what} has ${part} of vertex ${vertexName}, which job ${graph.name} lacks`,
      );
    }
    return vertexId;
  };
  const states: SubtaskCheckpointState[] = tasks.map((entry) => {
    const task = entry as JsonObject;
    const vertexName = String(task.vertexName);
    const vertexId = vertexIdOf(vertexName, "state");
    const handle = task.stateHandle as { path?: unknown; size?: unknown } | null;
    return {
      vertexId,
      vertexName,
      subtaskIndex: Number(task.subtaskIndex),
      executionAttemptId: ExecutionAttemptID.parse(String(task.executionAttemptId)),
      ...(handle === null || typeof handle?.path !== "string"
        ? {}
        : { stateHandle: { path: handle.path, size: Number(handle.size) } }),
      metrics: task.metrics as unknown as TaskCheckpointMetrics,
    };
  });
  // Subtasks finished when it was taken (FLIP-147) have no state: restored as finished, not
  // run again (a source would emit everything a second time).
  const finished = Array.isArray(metadata.finishedTasks) ? metadata.finishedTasks : [];
  const finishedSubtasks: FinishedSubtask[] = finished.map((entry) => {
    const task = entry as JsonObject;
    return {
      vertexId: vertexIdOf(String(task.vertexName), "a finished subtask"),
      subtaskIndex: Number(task.subtaskIndex),
    };
  });
  return new CompletedCheckpoint(
    BigInt(id),
    timestamp,
    timestamp,
    metadataPath,
    states,
    finishedSubtasks,
  );
}
