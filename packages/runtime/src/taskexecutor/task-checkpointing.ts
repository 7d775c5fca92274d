import type { JsonValue } from "@sluice/runtime-api";
import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
import { SubtaskCheckpointCoordinator } from "../checkpointing/subtask-checkpoint-coordinator.js";
import { channelStateSize } from "../checkpointing/task-channel-state.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import type { TaskDeploymentDescriptor } from "../messages/task-deployment-descriptor.js";
import {
  computeDefaultMaxParallelism,
  computeKeyGroupRangeForOperatorIndex,
} from "../partitioner/key-group-range-assignment.js";
import { redistributeTaskState } from "../state/redistribute-task-state.js";
import { StateAssignmentError } from "../state/state-assignment-error.js";
import type { TaskCheckpointing, TaskRestore } from "./task-resources.js";

/**
 * The restored task's snapshot of task `name`, read from its file; undefined for a fresh start.
 * A subtask of a vertex restored at another parallelism reads the snapshots of every old
 * subtask and keeps its part of them (`redistributeTaskState`: keyed state by its key groups,
 * operator list state by its mode).
 *
 * @throws the storage's error when a snapshot is missing or belongs to another task;
 *   StateAssignmentError when the old state cannot be redistributed (it names the vertex and
 *   where in the state).
 */
export async function readTaskRestore(
  tdd: TaskDeploymentDescriptor,
  name: string,
): Promise<TaskRestore | undefined> {
  const spec = tdd.taskRestore;
  if (spec === undefined) return undefined;
  const { checkpointId, stateHandle, rescaled } = spec;
  const finished = spec.finished === true ? { finished: true } : {};
  const identity = { jobId: spec.jobId ?? tdd.jobId, checkpointId, taskName: name };
  if (rescaled !== undefined) {
    const old: (JsonValue | undefined)[] = new Array(rescaled.parallelism).fill(undefined);
    await Promise.all(
      rescaled.subtasks.map(async ({ subtaskIndex, stateHandle: handle }) => {
        if (handle === undefined) return;
        const snapshot = await FsCheckpointStorage.readTaskSnapshot(handle, identity);
        if (channelStateSize(snapshot.channelState) > 0) {
          throw new StateAssignmentError(
            `${name}: the snapshot ${handle.path} of old subtask ${subtaskIndex} holds in-flight data of an unaligned checkpoint, which cannot be redistributed to parallelism ${tdd.numberOfSubtasks}; restore ${tdd.taskName} at parallelism ${rescaled.parallelism}, or from a savepoint (always aligned)`,
          );
        }
        old[subtaskIndex] = snapshot.state;
      }),
    );
    const maxParallelism = tdd.maxParallelism ?? computeDefaultMaxParallelism(tdd.numberOfSubtasks);
    const subtaskIndex = tdd.executionAttemptId.subtaskIndex;
    const state = redistributeTaskState(old, {
      vertexName: tdd.taskName,
      subtaskIndex,
      parallelism: tdd.numberOfSubtasks,
      keyGroupRange: computeKeyGroupRangeForOperatorIndex(
        maxParallelism,
        tdd.numberOfSubtasks,
        subtaskIndex,
      ),
    });
    return { checkpointId, state, ...finished };
  }
  if (stateHandle === undefined) return { checkpointId, state: undefined, ...finished };
  const { state, channelState } = await FsCheckpointStorage.readTaskSnapshot(stateHandle, identity);
  return { checkpointId, state, channelState, ...finished };
}

/**
 * The task's side of checkpointing: snapshots to the worker's folder `checkpointsDirectory`,
 * acknowledgements and declines to `jobMaster`.
 */
export function createTaskCheckpointing(
  tdd: TaskDeploymentDescriptor,
  name: string,
  checkpointsDirectory: string,
  jobMaster: JobMasterGateway | undefined,
): TaskCheckpointing {
  const mode = tdd.checkpointingMode as TaskCheckpointing["mode"];
  const storage = new FsCheckpointStorage(checkpointsDirectory, tdd.jobId);
  const coordinator = new SubtaskCheckpointCoordinator({
    jobId: tdd.jobId,
    executionAttemptId: tdd.executionAttemptId,
    taskName: name,
    mode,
    ...(tdd.unalignedCheckpoints === undefined ? {} : { unaligned: tdd.unalignedCheckpoints }),
    persist: (checkpointId, stateJson, channelState, location) =>
      storage.writeTaskState(
        checkpointId,
        tdd.executionAttemptId,
        name,
        stateJson,
        channelState,
        location,
      ),
    discard: (handle) => storage.discardState(handle),
    acknowledge: (ack) => jobMaster?.acknowledgeCheckpoint?.(ack),
    decline: (decline) => jobMaster?.declineCheckpoint?.(decline),
  });
  return { mode, coordinator };
}
