import { anyOf } from "@sluice/core";
import type { ResultPartitionWriter } from "@sluice/runtime-api";
import type { CheckpointedInputGate } from "../checkpointing/checkpointed-input-gate.js";
import type { RecordReaderInput } from "../io/record-reader.js";

/** True when some output has a record waiting for buffers (then no event can be sent). */
export function anyPendingRecord(partitions: readonly ResultPartitionWriter[]): boolean {
  for (const partition of partitions) {
    // A plugin that cannot tell is treated as blocked while unavailable.
    if (partition.hasPendingRecord?.() ?? !partition.isAvailable()) return true;
  }
  return false;
}

/** True when every output can take data now. */
export function outputsAvailable(partitions: readonly ResultPartitionWriter[]): boolean {
  for (const partition of partitions) if (!partition.isAvailable()) return false;
  return true;
}

/** Resolves when the first unavailable output turns available (at once when all are). */
export function outputsAvailableFuture(
  partitions: readonly ResultPartitionWriter[],
): Promise<void> {
  for (const partition of partitions) {
    if (!partition.isAvailable()) return partition.getAvailableFuture();
  }
  return Promise.resolve();
}

/**
 * `input`, polled only while every output in `partitions` can take an event: a barrier that
 * triggers a checkpoint inside the poll is forwarded at once, which a record waiting for buffers
 * would forbid (Flink's task likewise reads input only while its output is available). While an
 * output is back-pressured but no record waits for buffers, priority events (unaligned barriers,
 * a timed-out alignment) are still taken, as Flink's mailbox does: that is what lets an
 * unaligned checkpoint pass a back-pressured task.
 */
export function whileOutputsAvailable(
  input: CheckpointedInputGate,
  partitions: readonly ResultPartitionWriter[],
): RecordReaderInput {
  if (partitions.length === 0) return input;
  const priorityOnly = () => !anyPendingRecord(partitions) && input.hasPriorityEvent();
  return {
    numberOfInputChannels: input.numberOfInputChannels,
    pollNext: () => (outputsAvailable(partitions) || priorityOnly() ? input.pollNext() : undefined),
    pollPriorityEvent: () => (anyPendingRecord(partitions) ? undefined : input.pollPriorityEvent()),
    isFinished: () => input.isFinished(),
    getAvailableFuture: () =>
      outputsAvailable(partitions)
        ? input.getAvailableFuture()
        : anyOf([outputsAvailableFuture(partitions), input.getPriorityEventAvailableFuture()]),
  };
}
