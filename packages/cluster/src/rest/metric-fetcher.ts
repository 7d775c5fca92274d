import { MetricNames } from "@sluice/runtime";
import type { RegisteredTaskManager } from "../registered-task-manager.js";
import { metricValue, type SubtaskMetrics, subtaskMetrics } from "./subtask-metrics.js";

/** Per-second values of one subtask, from its counts and accumulated times. */
export interface SubtaskRates {
  readonly recordsInPerSecond: number;
  readonly recordsOutPerSecond: number;
  readonly bytesInPerSecond: number;
  readonly bytesOutPerSecond: number;
  readonly busyTimeMsPerSecond: number;
  readonly idleTimeMsPerSecond: number;
  readonly backPressuredTimeMsPerSecond: number;
}

/** The rates of a subtask that is not running, or was fetched only once. */
export const NO_RATES: SubtaskRates = {
  recordsInPerSecond: 0,
  recordsOutPerSecond: 0,
  bytesInPerSecond: 0,
  bytesOutPerSecond: 0,
  busyTimeMsPerSecond: 0,
  idleTimeMsPerSecond: 0,
  backPressuredTimeMsPerSecond: 0,
};

/** A subtask's metrics, with the task manager they came from. */
export interface FetchedSubtask extends SubtaskMetrics {
  /** The task manager's index. */
  readonly taskManager: number;
}

/** The counts the rates are derived from. */
const COUNTED = {
  recordsInPerSecond: MetricNames.IO_NUM_RECORDS_IN,
  recordsOutPerSecond: MetricNames.IO_NUM_RECORDS_OUT,
  bytesInPerSecond: "numBytesIn",
  bytesOutPerSecond: "numBytesOut",
  busyTimeMsPerSecond: MetricNames.ACC_TASK_BUSY_TIME,
  idleTimeMsPerSecond: MetricNames.ACC_TASK_IDLE_TIME,
  backPressuredTimeMsPerSecond: MetricNames.ACC_TASK_BACK_PRESSURED_TIME,
} as const satisfies Record<keyof SubtaskRates, string>;

/** The shortest window of the per-second values: about one second. */
const RATE_WINDOW_MS = 1000;
/** Samples kept per subtask: enough to span the window at the fetch interval. */
const MAX_SAMPLES = 8;

interface Sample {
  readonly atMs: number;
  readonly counts: Readonly<Record<keyof SubtaskRates, number>>;
}

/**
 * The job manager's view of its task managers' metrics (Flink's `MetricFetcher`): it queries each
 * connected task manager's registry over the control plane, keeps the latest metrics of every
 * running subtask and a few samples of their counts, from which {@link ratesOf} derives
 * per-second values over the last second or more. It fetches on demand ({@link update}, when the
 * last round is older than `metrics.fetcher.update-interval`, as Flink's does), or every interval
 * after {@link start}.
 */
export class MetricFetcher {
  private readonly samples = new Map<string, Sample[]>();
  private current: FetchedSubtask[] = [];
  private timer: NodeJS.Timeout | undefined;
  private fetching: Promise<void> | undefined;
  private stopped = false;
  private lastFetchAt = Number.NEGATIVE_INFINITY;

  /**
   * @param taskManagers - the registered task managers (queried while connected).
   * @param onUpdate - called after each round with every running subtask's latest metrics.
   * @param updateIntervalMs - {@link update} fetches only when the last round started longer ago.
   */
  constructor(
    private readonly taskManagers: () => readonly RegisteredTaskManager[],
    private readonly onUpdate: (subtasks: readonly FetchedSubtask[]) => void = () => {},
    private readonly updateIntervalMs = 0,
  ) {}

  /** Fetches now and then every `intervalMs` until {@link stop}. */
  start(intervalMs: number): void {
    if (this.timer !== undefined) return;
    this.stopped = false;
    void this.fetch();
    this.timer = setInterval(() => void this.fetch(), intervalMs);
  }

  /** Stops fetching (the latest metrics stay); a round in flight is dropped. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.stopped = true;
  }

  /** Every running subtask's latest metrics. */
  get subtasks(): readonly FetchedSubtask[] {
    return this.current;
  }

  /** Fetches when the last round started more than the update interval ago; else resolves. */
  update(): Promise<void> {
    if (this.stopped || performance.now() - this.lastFetchAt < this.updateIntervalMs) {
      return this.fetching ?? Promise.resolve();
    }
    return this.fetch();
  }

  /** One round: queries every connected task manager (a round still running is awaited). */
  fetch(): Promise<void> {
    this.fetching ??= this.doFetch().finally(() => {
      this.fetching = undefined;
    });
    return this.fetching;
  }

  /** Per-second values of a subtask over the last second; zeros until it was fetched twice. */
  ratesOf(attemptId: string): SubtaskRates {
    const samples = this.samples.get(attemptId) ?? [];
    const last = samples[samples.length - 1];
    const base =
      samples.findLast(
        (sample) => last !== undefined && last.atMs - sample.atMs >= RATE_WINDOW_MS,
      ) ?? samples[0];
    const rates = {} as Record<keyof SubtaskRates, number>;
    for (const key of Object.keys(COUNTED) as (keyof SubtaskRates)[]) {
      const seconds = last === undefined || base === undefined ? 0 : (last.atMs - base.atMs) / 1000;
      const delta =
        seconds > 0 ? ((last?.counts[key] ?? 0) - (base?.counts[key] ?? 0)) / seconds : 0;
      rates[key] = Math.max(0, key.endsWith("MsPerSecond") ? Math.min(1000, delta) : delta);
    }
    return rates;
  }

  private async doFetch(): Promise<void> {
    this.lastFetchAt = performance.now();
    const connected = this.taskManagers().filter((tm) => tm.connected);
    const answers = await Promise.allSettled(
      connected.map(async (tm) => ({ tm, metrics: await tm.queryMetrics() })),
    );
    // Stopped meanwhile: the job's final counters came with its tasks' results and win.
    if (this.stopped) return;
    const atMs = performance.now();
    const fetched: FetchedSubtask[] = [];
    const answered = new Set<number>();
    for (const answer of answers) {
      // A task manager that cannot answer is shutting down or lost: its loss is reported by the
      // heartbeats and the job; its subtasks keep their last values here.
      if (answer.status === "rejected") continue;
      answered.add(answer.value.tm.index);
      for (const subtask of subtaskMetrics(answer.value.metrics)) {
        fetched.push({ ...subtask, taskManager: answer.value.tm.index });
      }
    }
    // A task manager that is gone keeps nothing: its tasks run elsewhere after a restart.
    const connectedIndexes = new Set(connected.map((tm) => tm.index));
    const kept = this.current.filter(
      (subtask) => !answered.has(subtask.taskManager) && connectedIndexes.has(subtask.taskManager),
    );
    this.current = [...kept, ...fetched];
    const live = new Set(this.current.map((subtask) => subtask.attemptId));
    for (const attemptId of this.samples.keys()) {
      if (!live.has(attemptId)) this.samples.delete(attemptId);
    }
    for (const subtask of fetched) {
      const counts = {} as Record<keyof SubtaskRates, number>;
      for (const [key, name] of Object.entries(COUNTED)) {
        counts[key as keyof SubtaskRates] = metricValue(subtask, name);
      }
      const samples = this.samples.get(subtask.attemptId) ?? [];
      samples.push({ atMs, counts });
      if (samples.length > MAX_SAMPLES) samples.shift();
      this.samples.set(subtask.attemptId, samples);
    }
    this.onUpdate(this.current);
  }
}
