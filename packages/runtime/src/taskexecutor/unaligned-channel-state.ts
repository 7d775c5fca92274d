import type { ChannelStateWriter, InputGate, ResultPartitionWriter } from "@sluice/runtime-api";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { TaskChannelState } from "../checkpointing/task-channel-state.js";

// A task's side of unaligned checkpoints: its partitions and gates hand their in-flight data to
// the channel state writer, and a restore writes the overtaken output again.

/**
 * Unaligned checkpoints: the task's partitions and gates hand their in-flight data to the
 * coordinator's channel state writer. A plugin that cannot is refused here, at the start,
 * rather than taking checkpoints that would lose that data.
 */
export function setUpChannelStateWriter(
  taskName: string,
  partitions: readonly ResultPartitionWriter[],
  gates: readonly InputGate[],
  writer: ChannelStateWriter,
): void {
  for (const partition of partitions) {
    if (partition.setChannelStateWriter === undefined) {
      throw new CheckpointError(
        `${taskName}: unaligned checkpoints are enabled, but a result partition of the shuffle plugin cannot persist in-flight output (no setChannelStateWriter)`,
      );
    }
    partition.setChannelStateWriter(writer);
  }
  for (const gate of gates) {
    if (gate.setChannelStateWriter === undefined || gate.checkpointStarted === undefined) {
      throw new CheckpointError(
        `${taskName}: unaligned checkpoints are enabled, but an input gate of the shuffle plugin cannot persist in-flight input (no setChannelStateWriter/checkpointStarted)`,
      );
    }
    gate.setChannelStateWriter(writer);
  }
}

/**
 * A restore from an unaligned checkpoint: the output the checkpoint's barriers overtook is
 * written again, as raw bytes of each subpartition's stream, before any new record (Flink's
 * recovered output channel state). Back-pressure applies as to any output; `checkNotAborted`
 * throws once the task was canceled or failed.
 */
export async function restoreOutputChannelState(
  taskName: string,
  partitions: readonly ResultPartitionWriter[],
  state: TaskChannelState,
  checkNotAborted: () => void,
): Promise<void> {
  for (const { info, data } of state.resultSubpartitionState) {
    const partition = partitions[info.partitionIndex];
    if (partition?.addRecoveredState === undefined) {
      throw new CheckpointError(
        `${taskName}: the restored checkpoint holds output channel state for partition ${info.partitionIndex}, which ${partition === undefined ? "this task does not produce" : "cannot re-emit it (its shuffle plugin has no addRecoveredState)"}`,
      );
    }
    while (!partition.isAvailable()) await partition.getAvailableFuture();
    checkNotAborted();
    partition.addRecoveredState(info.subpartitionIndex, data);
  }
  for (const partition of partitions) {
    partition.flushAll();
    while (!partition.isAvailable()) await partition.getAvailableFuture();
  }
  checkNotAborted();
}
