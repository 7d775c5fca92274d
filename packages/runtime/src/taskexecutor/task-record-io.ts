import type { InputGate, ResultPartitionWriter } from "@sluice/runtime-api";
import type { CheckpointBarrierHandler } from "../checkpointing/checkpoint-barrier-handler.js";
import { CheckpointedInputGate } from "../checkpointing/checkpointed-input-gate.js";
import { createCheckpointBarrierHandler } from "../checkpointing/create-checkpoint-barrier-handler.js";
import { RecordReader } from "../io/record-reader.js";
import { createRecordWriter, type RecordWriter } from "../io/record-writer.js";
import type { TaskIOMetricGroup } from "../metrics/groups/task-io-metric-group.js";
import { whileOutputsAvailable } from "./output-availability.js";
import type { TaskResources } from "./task-resources.js";

/** The record writers and readers of a running task, over its partitions and gates. */
export interface TaskRecordIo {
  /** One per produced partition, in descriptor order. */
  readonly recordWriters: RecordWriter<unknown>[];
  /** One per input gate, in descriptor order. */
  readonly recordReaders: RecordReader<unknown>[];
  /** The barrier handler over every gate of a checkpointing task with inputs. */
  readonly barrierHandler: CheckpointBarrierHandler | undefined;
}

/**
 * Creates the record writers and readers of task `taskName` when it starts running. A
 * checkpointing task with inputs reads through one barrier handler of the job's mode over every
 * gate, replays the restored input channel state first, and polls its inputs only while its
 * outputs can take an event.
 */
export function createTaskRecordIo(
  taskName: string,
  resources: TaskResources,
  partitions: readonly ResultPartitionWriter[],
  gates: readonly InputGate[],
): TaskRecordIo {
  const { outputs, inputs, bufferTimeout, readerOptions, checkpointing } = resources;
  const io = resources.metricGroup.io;
  const recordWriters = outputs.map(({ partition, serializer, selector }) =>
    createRecordWriter(partition, serializer, selector, {
      taskName,
      bufferTimeout,
      numRecordsOut: io.numRecordsOut,
      backPressuredTime: io.softBackPressuredTimeMsPerSecond,
      hardBackPressuredTime: io.hardBackPressuredTimeMsPerSecond,
    }),
  );
  checkpointing?.coordinator.setOutputs(recordWriters);
  const metered = {
    ...readerOptions,
    numRecordsIn: io.numRecordsIn,
    idleTime: io.idleTimeMsPerSecond,
  };
  if (checkpointing === undefined || inputs.length === 0) {
    const recordReaders = inputs.map(
      ({ gate, serializer }) => new RecordReader(gate, serializer, metered),
    );
    return { recordWriters, recordReaders, barrierHandler: undefined };
  }
  // One handler over every gate, so a checkpoint aligns across all inputs of the task.
  const handler = createCheckpointBarrierHandler({
    mode: checkpointing.mode,
    taskName,
    inputs: gates,
    task: checkpointing.coordinator,
  });
  io.registerCheckpointMetrics(handler);
  const inputChannelState = resources.restore?.channelState?.inputChannelState ?? [];
  const checkpointedInputs = inputs.map(({ gate }) => {
    const input = new CheckpointedInputGate([gate], handler);
    if (inputChannelState.length > 0) input.setRecoveredState(inputChannelState);
    return input;
  });
  const recordReaders = inputs.map(
    ({ serializer }, i) =>
      new RecordReader(
        whileOutputsAvailable(checkpointedInputs[i] as CheckpointedInputGate, partitions),
        serializer,
        metered,
      ),
  );
  for (const reader of recordReaders) reader.setSiblings(recordReaders);
  // The partial records the readers hold go first into a starting unaligned checkpoint.
  checkpointing.coordinator.setInputs(gates, (checkpointId) => {
    const writer = checkpointing.coordinator.channelStateWriter;
    if (writer === undefined) return;
    recordReaders.forEach((reader, i) => {
      const input = checkpointedInputs[i] as CheckpointedInputGate;
      reader.prepareSnapshot(writer, checkpointId, (channel) => input.getChannelInfo(channel));
    });
  });
  return { recordWriters, recordReaders, barrierHandler: handler };
}

/**
 * Flushes and finishes every partition (EndOfPartition) of a task whose code returned, waiting
 * out back-pressure first; `checkNotAborted` throws once the task was canceled meanwhile.
 *
 * @throws the failure cause of a partition that could not finish.
 */
export async function finishPartitions(
  recordWriters: readonly RecordWriter<unknown>[],
  partitions: readonly ResultPartitionWriter[],
  io: TaskIOMetricGroup,
  checkNotAborted: () => void,
): Promise<void> {
  for (const writer of recordWriters) {
    writer.flushAll();
    writer.close();
  }
  for (const partition of partitions) {
    // A record that ran out of buffers completes as buffers come back; finish() needs it done.
    // Waiting for that is back-pressure like any other wait for an output.
    if (!partition.isAvailable()) {
      const backPressuredTime =
        partition.hasPendingRecord?.() === true
          ? io.hardBackPressuredTimeMsPerSecond
          : io.softBackPressuredTimeMsPerSecond;
      backPressuredTime.markStart();
      while (!partition.isAvailable()) await partition.getAvailableFuture();
      backPressuredTime.markEnd();
    }
    checkNotAborted();
    partition.finish();
    // A blocking partition finishes asynchronously (its last data is still being written to
    // disk): the task is FINISHED only once its output is complete.
    while (!partition.isAvailable()) await partition.getAvailableFuture();
    const failure = partition.getFailureCause?.();
    if (failure !== undefined) throw failure;
    partition.close();
  }
}
