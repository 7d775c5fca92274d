import type { InputGate, ResultPartitionWriter } from "@sluice/runtime-api";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { TaskDeploymentDescriptor } from "../messages/task-deployment-descriptor.js";

// FLIP-147's all-records-processed handshake: a task that sent EndOfData finishes only once the
// consumers of its pipelined partitions processed every record before it (Flink's StreamTask
// waits for `getAllDataProcessedFuture` of every writer, next to its final checkpoint). A
// consumer acknowledges when it reads the EndOfData (AckAllUserRecordsProcessed). An unaligned
// barrier overtakes the EndOfData and the records queued before it, so the completion of the
// final checkpoint alone does not say that they were processed: a task that finished then, and
// was recorded as finished by a later checkpoint, would never send them again on a restore.

/** The writers of `descriptor`'s pipelined partitions (blocking ones are read after the end). */
function pipelined(
  partitions: readonly ResultPartitionWriter[],
  descriptor: TaskDeploymentDescriptor,
): ResultPartitionWriter[] {
  return partitions.filter(
    (_, i) =>
      descriptor.producedPartitions[i]?.deployment.partitionDescriptor.partitionType.isPipelined ===
      true,
  );
}

/**
 * Refuses a shuffle plugin that cannot take part in the handshake, at the task's start, when
 * the job's checkpoints are unaligned and go on after tasks finish: without it the task could be
 * recorded as finished while a consumer still held its records.
 *
 * @throws CheckpointError naming what the plugin lacks.
 */
export function checkAllRecordsProcessedHandshake(
  taskName: string,
  partitions: readonly ResultPartitionWriter[],
  gates: readonly InputGate[],
  descriptor: TaskDeploymentDescriptor,
): void {
  if (pipelined(partitions, descriptor).some((p) => p.getAllDataProcessedFuture === undefined)) {
    throw new CheckpointError(
      `${taskName}: unaligned checkpoints go on after tasks finish, but a pipelined result partition of the shuffle plugin cannot tell when its consumers processed all its records (no getAllDataProcessedFuture)`,
    );
  }
  if (gates.some((gate) => gate.acknowledgeAllRecordsProcessed === undefined)) {
    throw new CheckpointError(
      `${taskName}: unaligned checkpoints go on after tasks finish, but an input gate of the shuffle plugin cannot acknowledge that all records were processed (no acknowledgeAllRecordsProcessed)`,
    );
  }
}

/**
 * Resolves once the consumers of every pipelined partition of the task processed all its
 * records; rejects with the partition's error when one is released first. Writers without
 * {@link ResultPartitionWriter.getAllDataProcessedFuture} are not waited for (aligned
 * checkpoints do not need them; unaligned ones refuse them at the start).
 */
export function allDataProcessed(
  partitions: readonly ResultPartitionWriter[],
  descriptor: TaskDeploymentDescriptor,
): Promise<void> {
  const futures = pipelined(partitions, descriptor).map((partition) =>
    partition.getAllDataProcessedFuture?.(),
  );
  return Promise.all(futures).then(() => undefined);
}
