import { MeterView } from "../meter-view.js";
import { MetricNames } from "../metric-names.js";
import { SimpleCounter } from "../simple-counter.js";
import { TimerGauge } from "../timer-gauge.js";
import type { TaskMetricGroup } from "./task-metric-group.js";

const MILLIS_PER_SECOND = 1000;

/**
 * A task's I/O metrics (Flink's `TaskIOMetricGroup`), registered in the task's scope:
 *
 * - `numRecordsIn` / `numRecordsOut` (counters) with `numRecordsInPerSecond` /
 *   `numRecordsOutPerSecond` (meters over 60 s). The task's record readers and writers count them,
 *   one addition per record.
 * - `idleTimeMsPerSecond` and `backPressuredTimeMsPerSecond` ({@link TimerGauge}s): the task's
 *   readers mark the time it waits for input, its writers the time it waits for an output to
 *   accept data.
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
  /** The time the task waits for its outputs to accept data. */
  readonly backPressuredTimeMsPerSecond: TimerGauge;
  private readonly group: TaskMetricGroup;
  private taskStartNanos = -1;

  constructor(group: TaskMetricGroup) {
    this.group = group;
    const clock = group.registry.clock;
    this.idleTimeMsPerSecond = new TimerGauge(clock);
    this.backPressuredTimeMsPerSecond = new TimerGauge(clock);
    group.counter(MetricNames.IO_NUM_RECORDS_IN, this.numRecordsIn);
    group.counter(MetricNames.IO_NUM_RECORDS_OUT, this.numRecordsOut);
    group.meter(MetricNames.IO_NUM_RECORDS_IN_RATE, new MeterView(this.numRecordsIn));
    group.meter(MetricNames.IO_NUM_RECORDS_OUT_RATE, new MeterView(this.numRecordsOut));
    group.gauge(MetricNames.TASK_IDLE_TIME, this.idleTimeMsPerSecond);
    group.gauge(MetricNames.TASK_BACK_PRESSURED_TIME, this.backPressuredTimeMsPerSecond);
    group.gauge(MetricNames.TASK_BUSY_TIME, () => this.getBusyTimePerSecond());
    group.gauge(MetricNames.ACC_TASK_IDLE_TIME, () =>
      this.idleTimeMsPerSecond.getAccumulatedCount(),
    );
    group.gauge(MetricNames.ACC_TASK_BACK_PRESSURED_TIME, () =>
      this.backPressuredTimeMsPerSecond.getAccumulatedCount(),
    );
    group.gauge(MetricNames.ACC_TASK_BUSY_TIME, () => this.getAccumulatedBusyTime());
  }

  /** The task started running its code: busy time is measured from here (Flink's `markTaskStart`). */
  markTaskStart(): void {
    if (this.taskStartNanos < 0)
      this.taskStartNanos = this.group.registry.clock.relativeTimeNanos();
  }

  /** `busyTimeMsPerSecond`: 1000 minus idle and back-pressured time; `NaN` before the task runs. */
  getBusyTimePerSecond(): number {
    if (this.taskStartNanos < 0) return Number.NaN;
    const waiting =
      this.idleTimeMsPerSecond.getValue() + this.backPressuredTimeMsPerSecond.getValue();
    return MILLIS_PER_SECOND - Math.min(waiting, MILLIS_PER_SECOND);
  }

  /** `accumulatedBusyTime`: ms since the task started, minus idle and back-pressured time. */
  getAccumulatedBusyTime(): number {
    if (this.taskStartNanos < 0) return Number.NaN;
    const running = (this.group.registry.clock.relativeTimeNanos() - this.taskStartNanos) / 1e6;
    const waiting =
      this.idleTimeMsPerSecond.getAccumulatedCount() +
      this.backPressuredTimeMsPerSecond.getAccumulatedCount();
    return Math.max(0, Math.floor(running - waiting));
  }
}
