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
  /** Jobs running on the job manager (Gauge). */
  NUM_RUNNING_JOBS: "numRunningJobs",
  /** Milliseconds since the job started running; -1 once it ended (Gauge). */
  UP_TIME: "uptime",
} as const;
