import { FsCheckpointStorage } from "../checkpointing/fs-checkpoint-storage.js";
import { SubtaskCheckpointCoordinator } from "../checkpointing/subtask-checkpoint-coordinator.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import type { TaskDeploymentDescriptor } from "../messages/task-deployment-descriptor.js";
import type { TaskCheckpointing, TaskRestore } from "./task-resources.js";

/**
 * The restored task's snapshot of task `name`, read from its file; undefined for a fresh start.
 *
 * @throws the storage's error when the snapshot is missing or belongs to another task.
 */
export async function readTaskRestore(
  tdd: TaskDeploymentDescriptor,
  name: string,
): Promise<TaskRestore | undefined> {
  const spec = tdd.taskRestore;
  if (spec === undefined) return undefined;
  const { checkpointId, stateHandle } = spec;
  const finished = spec.finished === true ? { finished: true } : {};
  if (stateHandle === undefined) return { checkpointId, state: undefined, ...finished };
  const { state, channelState } = await FsCheckpointStorage.readTaskSnapshot(stateHandle, {
    jobId: tdd.jobId,
    checkpointId,
    taskName: name,
  });
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
    persist: (checkpointId, stateJson, channelState) =>
      storage.writeTaskState(checkpointId, tdd.executionAttemptId, name, stateJson, channelState),
    discard: (handle) => storage.discardState(handle),
    acknowledge: (ack) => jobMaster?.acknowledgeCheckpoint?.(ack),
    decline: (decline) => jobMaster?.declineCheckpoint?.(decline),
  });
  return { mode, coordinator };
}
