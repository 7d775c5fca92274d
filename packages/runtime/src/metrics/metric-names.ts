/**
 * The names of the metrics the runtime registers itself (Flink's `MetricNames`). Plugins register
 * theirs (`numBytesIn`, `Shuffle.Netty.*`) through the `ShuffleMetricSink`.
 */
export const MetricNames = {
  /** Records the task read from its inputs (Counter). */
  IO_NUM_RECORDS_IN: "numRecordsIn",
  /** Records the task wrote to its outputs (Counter). */
  IO_NUM_RECORDS_OUT: "numRecordsOut",
  /** Records read per second (Meter). */
  IO_NUM_RECORDS_IN_RATE: "numRecordsInPerSecond",
  /** Records written per second (Meter). */
  IO_NUM_RECORDS_OUT_RATE: "numRecordsOutPerSecond",
  /** Milliseconds per second the task waited for input (Gauge). */
  TASK_IDLE_TIME: "idleTimeMsPerSecond",
  /** Milliseconds per second the task waited for its outputs to accept data (Gauge). */
  TASK_BACK_PRESSURED_TIME: "backPressuredTimeMsPerSecond",
  /** Milliseconds per second the task waited for its outputs to accept a new record (Gauge). */
  TASK_SOFT_BACK_PRESSURED_TIME: "softBackPressuredTimeMsPerSecond",
  /** Milliseconds per second an emitted record of the task waited for output buffers (Gauge). */
  TASK_HARD_BACK_PRESSURED_TIME: "hardBackPressuredTimeMsPerSecond",
  /** The longest single soft back-pressured period of the last 5 s, in ms (Gauge). */
  TASK_MAX_SOFT_BACK_PRESSURED_TIME: "maxSoftBackPressureTimeMs",
  /** The longest single hard back-pressured period of the last 5 s, in ms (Gauge). */
  TASK_MAX_HARD_BACK_PRESSURED_TIME: "maxHardBackPressureTimeMs",
  /** Milliseconds per second the task was neither idle nor back-pressured (Gauge). */
  TASK_BUSY_TIME: "busyTimeMsPerSecond",
  /** Total milliseconds the task was idle (Gauge). */
  ACC_TASK_IDLE_TIME: "accumulatedIdleTime",
  /** Total milliseconds the task was back-pressured (Gauge). */
  ACC_TASK_BACK_PRESSURED_TIME: "accumulatedBackPressuredTime",
  /** Total milliseconds the task was busy since it started running (Gauge). */
  ACC_TASK_BUSY_TIME: "accumulatedBusyTime",
  /** 1 while an output of the task does not accept data, else 0 (Gauge). */
  IS_BACK_PRESSURED: "isBackPressured",
  /** Nanoseconds the task's current or last checkpoint alignment took (Gauge). */
  CHECKPOINT_ALIGNMENT_TIME: "checkpointAlignmentTime",
  /** Nanoseconds from a checkpoint's creation to its first barrier at the task (Gauge). */
  CHECKPOINT_START_DELAY_TIME: "checkpointStartDelayNanos",
  /** Jobs running on the job manager (Gauge). */
  NUM_RUNNING_JOBS: "numRunningJobs",
  /** Milliseconds since the job started running; -1 once it ended (Gauge). */
  UP_TIME: "uptime",
  /** Checkpoints triggered: completed, failed and in progress (Gauge). */
  TOTAL_NUMBER_OF_CHECKPOINTS: "totalNumberOfCheckpoints",
  /** Checkpoints triggered and not completed or failed yet (Gauge). */
  NUMBER_OF_IN_PROGRESS_CHECKPOINTS: "numberOfInProgressCheckpoints",
  /** Checkpoints completed (Gauge). */
  NUMBER_OF_COMPLETED_CHECKPOINTS: "numberOfCompletedCheckpoints",
  /** Checkpoints failed (Gauge). */
  NUMBER_OF_FAILED_CHECKPOINTS: "numberOfFailedCheckpoints",
  /** The id of the newest completed checkpoint (Gauge). */
  LAST_COMPLETED_CHECKPOINT_ID: "lastCompletedCheckpointId",
  /** Milliseconds the newest completed checkpoint took (Gauge). */
  LAST_CHECKPOINT_DURATION: "lastCheckpointDuration",
  /** Bytes of the newest completed checkpoint (Gauge). */
  LAST_CHECKPOINT_SIZE: "lastCheckpointSize",
  /** Full bytes of the newest completed checkpoint (Gauge). */
  LAST_CHECKPOINT_FULL_SIZE: "lastCheckpointFullSize",
  /** Bytes processed during the alignment of the newest completed checkpoint (Gauge). */
  LAST_CHECKPOINT_PROCESSED_DATA: "lastCheckpointProcessedData",
  /** Bytes of in-flight data the newest completed checkpoint persisted (Gauge). */
  LAST_CHECKPOINT_PERSISTED_DATA: "lastCheckpointPersistedData",
  /** When the last checkpoint was restored, in ms since the epoch (Gauge). */
  LAST_CHECKPOINT_RESTORE_TIMESTAMP: "lastCheckpointRestoreTimestamp",
} as const;
