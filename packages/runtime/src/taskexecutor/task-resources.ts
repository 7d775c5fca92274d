import type { TypeSerializer } from "@sluice/core";
import type { InputGate, JsonValue, ResultPartitionWriter } from "@sluice/runtime-api";
import type { SubtaskCheckpointCoordinator } from "../checkpointing/subtask-checkpoint-coordinator.js";
import type { TaskChannelState } from "../checkpointing/task-channel-state.js";
import type { RecordReaderOptions } from "../io/record-reader.js";
import type { BufferTimeout } from "../io/record-writer.js";
import type { CheckpointingMode } from "../messages/checkpointing-mode.js";
import type { TaskDeploymentDescriptor } from "../messages/task-deployment-descriptor.js";
import type { TaskExecutionState } from "../messages/task-execution-state.js";
import type { TaskMetricGroup } from "../metrics/groups/task-metric-group.js";
import type { ChannelSelector } from "../partitioner/channel-selector.js";

/** How one output of a task is written: its writer from the plugin and the record format. */
export interface TaskOutput {
  readonly partition: ResultPartitionWriter;
  readonly serializer: TypeSerializer<unknown>;
  readonly selector: ChannelSelector<unknown>;
}

/** How one input of a task is read: its gate from the plugin and the record format. */
export interface TaskInput {
  readonly gate: InputGate;
  readonly serializer: TypeSerializer<unknown>;
}

/** What the TaskExecutor hands a Task it deployed. Internal to the runtime. */
export interface TaskResources {
  readonly descriptor: TaskDeploymentDescriptor;
  readonly outputs: readonly TaskOutput[];
  readonly inputs: readonly TaskInput[];
  readonly bufferTimeout: BufferTimeout;
  readonly readerOptions: RecordReaderOptions;
  /** The task's metric group: its readers and writers count records and time into `io`. */
  readonly metricGroup: TaskMetricGroup;
  /** Receives every state change; must not throw. */
  readonly onStateChange: (update: TaskExecutionState) => void;
  /** Present when the job checkpoints: the mode and the task's side of checkpointing. */
  readonly checkpointing?: TaskCheckpointing;
  /** Present when the task is restored from a checkpoint. */
  readonly restore?: TaskRestore;
  /**
   * `taskmanager.network.memory.buffer-debloat.period` when buffer debloating is on: how often
   * the task's gates recalculate and announce their buffer size. Absent: never.
   */
  readonly bufferDebloatPeriodMs?: number;
}

/** How a task of a checkpointing job takes part in checkpoints. Internal to the runtime. */
export interface TaskCheckpointing {
  readonly mode: CheckpointingMode;
  readonly coordinator: SubtaskCheckpointCoordinator;
}

/** What a restored task starts from (Flink's JobManagerTaskRestore, read from its file). */
export interface TaskRestore {
  /** The checkpoint the task is restored from. */
  readonly checkpointId: bigint;
  /** The state the task stored in it; `undefined` when it stored none. */
  readonly state: JsonValue | undefined;
  /**
   * The in-flight data of an unaligned checkpoint: replayed before new input (input channels)
   * and before new records (output subpartitions). Absent or empty for an aligned checkpoint.
   */
  readonly channelState?: TaskChannelState;
  /** True when the subtask had finished before that checkpoint: it does not run again. */
  readonly finished?: boolean;
}
