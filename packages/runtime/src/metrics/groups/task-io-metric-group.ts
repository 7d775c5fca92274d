import { MeterView } from "../meter-view.js";
import { MetricNames } from "../metric-names.js";
import { SimpleCounter } from "../simple-counter.js";
import { TimerGauge } from "../timer-gauge.js";
import type { TaskMetricGroup } from "./task-metric-group.js";

const MILLIS_PER_SECOND = 1000;

/** What the checkpoint gauges read of a task's barrier handler. */
export interface CheckpointTimings {
  /** Nanoseconds of the current alignment so far, or of the last one. */
  getAlignmentDurationNanos(): number;
  /** Nanoseconds from the newest checkpoint's creation to its first barrier at the task. */
  getCheckpointStartDelayNanos(): number;
}

/**
 * A task's I/O metrics (Flink's `TaskIOMetricGroup`), registered in the task's scope:
 *
 * - `numRecordsIn` / `numRecordsOut` (counters) with `numRecordsInPerSecond` /
 *   `numRecordsOutPerSecond` (meters over 60 s). The task's record readers and writers count them,
 *   one addition per record.
 * - `idleTimeMsPerSecond`, `softBackPressuredTimeMsPerSecond` and
 *   `hardBackPressuredTimeMsPerSecond` ({@link TimerGauge}s): the task's readers mark the time it
 *   waits for input, its writers the time it waits for an output to accept data — hard while a
 *   record it already emitted waits for buffers (Flink's task thread blocked in a buffer
 *   request), soft otherwise (Flink's mailbox waiting for output availability).
 * - `backPressuredTimeMsPerSecond`: soft plus hard, as Flink adds them; `maxSoftBackPressureTimeMs`
 *   and `maxHardBackPressureTimeMs`: the longest single period of each in the last 5 s interval.
 * - `busyTimeMsPerSecond`: the rest of each second, `1000 - min(idle + back-pressured, 1000)`, as
 *   Flink computes it; `NaN` until the task runs.
 * - `accumulatedIdleTime`, `accumulatedBackPressuredTime`, `accumulatedBusyTime`: the totals in ms.
 *
 * Tasks share the process's event loop, so "busy" is the time a task neither waited for input nor
 * for its outputs — also when it waited for something else (a timer, a database).
 */
export class TaskIOMetricGroup {
  /** Records read; the task's record readers increment it. */
  readonly numRecordsIn = new SimpleCounter();
  /** Records written; the task's record writers increment it. */
  readonly numRecordsOut = new SimpleCounter();
  /** The time the task waits for input. */
  readonly idleTimeMsPerSecond: TimerGauge;
  /** The time the task waits for its outputs to accept a new record. */
  readonly softBackPressuredTimeMsPerSecond: TimerGauge;
  /** The time a record the task emitted waits for output buffers to be written completely. */
  readonly hardBackPressuredTimeMsPerSecond: TimerGauge;
  private readonly group: TaskMetricGroup;
  private taskStartNanos = -1;

  constructor(group: TaskMetricGroup) {
    this.group = group;
    const clock = group.registry.clock;
    this.idleTimeMsPerSecond = new TimerGauge(clock);
    const soft = new TimerGauge(clock);
    const hard = new TimerGauge(clock);
    this.softBackPressuredTimeMsPerSecond = soft;
    this.hardBackPressuredTimeMsPerSecond = hard;
    group.counter(MetricNames.IO_NUM_RECORDS_IN, this.numRecordsIn);
    group.counter(MetricNames.IO_NUM_RECORDS_OUT, this.numRecordsOut);
    group.meter(MetricNames.IO_NUM_RECORDS_IN_RATE, new MeterView(this.numRecordsIn));
    group.meter(MetricNames.IO_NUM_RECORDS_OUT_RATE, new MeterView(this.numRecordsOut));
    group.gauge(MetricNames.TASK_IDLE_TIME, this.idleTimeMsPerSecond);
    group.gauge(MetricNames.TASK_BACK_PRESSURED_TIME, () => this.getBackPressuredTimePerSecond());
    group.gauge(MetricNames.TASK_SOFT_BACK_PRESSURED_TIME, soft);
    group.gauge(MetricNames.TASK_HARD_BACK_PRESSURED_TIME, hard);
    group.gauge(MetricNames.TASK_MAX_SOFT_BACK_PRESSURED_TIME, () =>
      soft.getMaxSingleMeasurement(),
    );
    group.gauge(MetricNames.TASK_MAX_HARD_BACK_PRESSURED_TIME, () =>
      hard.getMaxSingleMeasurement(),
    );
    group.gauge(MetricNames.TASK_BUSY_TIME, () => this.getBusyTimePerSecond());
    group.gauge(MetricNames.ACC_TASK_IDLE_TIME, () =>
      this.idleTimeMsPerSecond.getAccumulatedCount(),
    );
    group.gauge(MetricNames.ACC_TASK_BACK_PRESSURED_TIME, () =>
      this.getAccumulatedBackPressuredTime(),
    );
    group.gauge(MetricNames.ACC_TASK_BUSY_TIME, () => this.getAccumulatedBusyTime());
  }

  /** The task started running its code: busy time is measured from here (Flink's `markTaskStart`). */
  markTaskStart(): void {
    if (this.taskStartNanos < 0)
      this.taskStartNanos = this.group.registry.clock.relativeTimeNanos();
  }

  /**
   * Registers the task's checkpoint gauges (Flink's `checkpointAlignmentTime` and
   * `checkpointStartDelayNanos`, in nanoseconds) over the barrier handler of its inputs.
   */
  registerCheckpointMetrics(handler: CheckpointTimings): void {
    this.group.gauge(MetricNames.CHECKPOINT_ALIGNMENT_TIME, () =>
      handler.getAlignmentDurationNanos(),
    );
    this.group.gauge(MetricNames.CHECKPOINT_START_DELAY_TIME, () =>
      handler.getCheckpointStartDelayNanos(),
    );
  }

  /** `backPressuredTimeMsPerSecond`: soft plus hard back-pressured time, at most 1000. */
  getBackPressuredTimePerSecond(): number {
    const total =
      this.softBackPressuredTimeMsPerSecond.getValue() +
      this.hardBackPressuredTimeMsPerSecond.getValue();
    return Math.min(total, MILLIS_PER_SECOND);
  }

  /** `accumulatedBackPressuredTime`: total ms soft or hard back-pressured. */
  getAccumulatedBackPressuredTime(): number {
    return (
      this.softBackPressuredTimeMsPerSecond.getAccumulatedCount() +
      this.hardBackPressuredTimeMsPerSecond.getAccumulatedCount()
    );
  }

  /** `busyTimeMsPerSecond`: 1000 minus idle and back-pressured time; `NaN` before the task runs. */
  getBusyTimePerSecond(): number {
    if (this.taskStartNanos < 0) return Number.NaN;
    const waiting = this.idleTimeMsPerSecond.getValue() + this.getBackPressuredTimePerSecond();
    return MILLIS_PER_SECOND - Math.min(waiting, MILLIS_PER_SECOND);
  }

  /** `accumulatedBusyTime`: ms since the task started, minus idle and back-pressured time. */
  getAccumulatedBusyTime(): number {
    if (this.taskStartNanos < 0) return Number.NaN;
    const running = (this.group.registry.clock.relativeTimeNanos() - this.taskStartNanos) / 1e6;
    const waiting =
      this.idleTimeMsPerSecond.getAccumulatedCount() + this.getAccumulatedBackPressuredTime();
    return Math.max(0, Math.floor(running - waiting));
  }
}
