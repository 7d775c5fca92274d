import { JobManager, type RegisteredTaskManager, type ShutdownReport } from "@sluice/cluster";
import { ConfigurationError, ErrorCodes, isSluiceError } from "@sluice/core";
import {
  type Configuration,
  describeThrowable,
  type JobExecution,
  type JobResult,
  loadConfigurationAndShufflePlugin,
  serializeThrowable,
} from "@sluice/runtime";
import {
  applyBatchDefaults,
  BATCH_SHUFFLE_MESSAGE,
  type BatchShuffleReport,
  BatchShuffleReportSchema,
  type BatchSummary,
  batchDifferences,
  batchTotals,
  compressionCodecOf,
} from "./batch-mode.js";
import { applyCheckpointingFlags, recoverySettingsOf } from "./checkpointing-options.js";
import type { DemoOptions } from "./cli.js";
import {
  METRIC_ENDPOINTS_MESSAGE,
  MetricEndpointsSchema,
  reporterEndpoints,
  THROTTLE_MESSAGE,
} from "./control-messages.js";
import { referenceCounts } from "@sluice/corpus";
import { MetricFetcher } from "./dashboard/metric-fetcher.js";
import { startDashboard } from "./dashboard/start-dashboard.js";
import type { WebMonitorEndpoint } from "./dashboard/web-monitor-endpoint.js";
import { APP_DIR, APP_VERSION, isUsageError, SHUFFLE_KEY } from "./demo-application.js";
import { formatInteger } from "./format.js";
import { type LocalTaskManager, LocalTaskManagers } from "./local-task-managers.js";
import { checkParallelismFitsNetworkMemory } from "./parallelism-memory.js";
import { createProgressView, type ProgressSnapshot, type ProgressView } from "./progress.js";
import { Recovery } from "./recovery.js";
import { StageTimeline } from "./stage-timeline.js";
import { formatSummary, type JobReport, type ProcessReport, summaryJson } from "./summary.js";
import { subtaskName, taskProgressOf } from "./task-metrics.js";
import { ShutdownExtrasSchema, type TaskProgress, TaskProgressSchema } from "./task-progress.js";
import { verifyAtLeastOnce, verifyCounts } from "./verification.js";
import { COUNT_VERTEX, type WordCountJob, wordCountJob } from "./word-count-job.js";

/** How long local task managers may take to start and register. */
const STARTUP_TIMEOUT_MS = 30_000;
/** How long a clean shutdown may take. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** After a failure: how long the job's tasks and the task managers get before they are killed. */
const CANCEL_GRACE_MS = 3_000;
const PROGRESS_RENDER_MS = 500;
/** How often the task managers' metrics are fetched (progress line and dashboard). */
const METRICS_FETCH_MS = 500;

/** The streams the demo writes to. */
export interface DemoIO {
  /** Machine-readable output (`--json`). */
  readonly stdout: NodeJS.WriteStream;
  /** Human-readable output: stdout, or stderr with `--json`. */
  readonly human: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * Why the job failed. `rank` orders the report: the root cause (a task manager killed by a
 * signal, one that was lost) comes before its consequences (tasks failing because a peer
 * vanished).
 */
interface Failure {
  readonly rank: number;
  readonly message: string;
  readonly exitCode: number;
}

class JobFailedError extends Error {
  constructor() {
    super("job failed");
  }
}

class Deferred<T> {
  readonly promise: Promise<T>;
  resolve!: (value: T) => void;
  reject!: (error: unknown) => void;
  constructor() {
    this.promise = new Promise<T>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

/**
 * The demo's job manager role (`main.js jobmanager`, and the job manager of the one-command demo):
 * a `JobManager` of @sluice/cluster that waits for its task managers (started here as child
 * processes in the one-command mode, anywhere in the standalone mode), deploys the word count onto
 * them, follows its progress from the task managers' reports on the application channel,
 * verifies the counts and shuts every task manager down, on every path.
 */
export class JobManagerRole {
  private readonly failures: Failure[] = [];
  private readonly failed = new Deferred<never>();
  private readonly progress = new Map<string, TaskProgress & { taskManager: number }>();
  /** The task managers' metrics: the source of the progress line, the table and the dashboard. */
  private readonly fetcher = new MetricFetcher(
    () => this.jobManager?.taskManagers ?? [],
    (subtasks) => {
      // A later attempt of a subtask replaces an earlier one still reporting.
      const byAttempt = [...subtasks].sort((a, b) => a.attemptNumber - b.attemptNumber);
      for (const subtask of byAttempt) {
        const name = subtaskName(subtask, this.options.parallelism);
        this.setProgress(taskProgressOf(subtask, name, false), subtask.taskManager);
      }
    },
  );
  private dashboard: WebMonitorEndpoint | undefined;
  /** The counters' throttle (`--throttle`, `POST /throttle`): words/s per count subtask. */
  private throttle: number | null;
  private jobState = "CREATED";
  /** Why the job failed or was canceled, for the dashboard's final status. */
  private jobRootCause: string | null = null;
  /** When the job ended (`performance.now()`), so the dashboard's clock stops with it. */
  private endedAt: number | undefined;
  private readonly lost = new Set<RegisteredTaskManager>();
  /** Lost task managers the job went on without (dropped from the pool, or recovered from). */
  private readonly survived = new Set<RegisteredTaskManager>();
  private readonly shutdownReports = new Map<RegisteredTaskManager, ShutdownReport>();
  /** Exit codes the local children should end with, once told to shut down. */
  private readonly expectedExit = new Map<number, number>();
  private jobManager: JobManager | undefined;
  private execution: JobExecution | undefined;
  private local: LocalTaskManagers | undefined;
  private recovery: Recovery | undefined;
  private startedAt = 0;
  private view: ProgressView | undefined;
  private renderTimer: NodeJS.Timeout | undefined;
  private interruptedBy: NodeJS.Signals | undefined;
  /** Batch mode: the codec of the blocking partitions, and when each stage ran. */
  private batch: { codec: string; timeline?: StageTimeline } | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => this.interrupted(signal);
  private readonly onExit = () => this.local?.killAll("SIGKILL");

  constructor(
    private readonly options: DemoOptions,
    private readonly io: DemoIO,
  ) {
    // Attach a handler so a rejection before anyone awaits `failed` is never "unhandled".
    this.failed.promise.catch(() => {});
    this.throttle = options.throttle ?? null;
  }

  /** Runs the job; resolves with the process exit code. */
  async run(): Promise<number> {
    const { options } = this;
    let jobManager: JobManager;
    try {
      // Loaded with the plugin, so that the keys it owns are not reported as unknown.
      const { configuration } = await loadConfigurationAndShufflePlugin({
        ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
        args: options.dynamicProperties,
        overrides: options.shuffle === undefined ? {} : { [SHUFFLE_KEY]: options.shuffle },
        loader: { applicationDirs: [APP_DIR] },
      });
      applyCheckpointingFlags(configuration, options);
      if (options.mode === "streaming") {
        checkParallelismFitsNetworkMemory(configuration, options.parallelism, options.taskManagers);
      }
      this.recovery = new Recovery(
        recoverySettingsOf(configuration),
        options.killTaskManagerAfterMs,
      );
      if (options.mode === "batch") {
        applyBatchDefaults(configuration);
        this.batch = { codec: compressionCodecOf(configuration) };
      }
      jobManager = await this.startJobManager(configuration);
    } catch (error) {
      if (error instanceof ConfigurationError) {
        this.io.stderr.write(`error: ${error.message}\n`);
        return 2;
      }
      // The loader's message names the key, the value, where it looked and what it found.
      const code = (error as { code?: string }).code;
      this.io.stderr.write(
        `error: ${code === undefined ? "" : `[${code}] `}${(error as Error).message}\n`,
      );
      return isUsageError(error) ? 2 : 1;
    }
    this.jobManager = jobManager;

    const shuffle = jobManager.plugin.reference;
    const job = wordCountJob(options);
    this.say(
      `Sluice demo: word count of ${formatInteger(options.records)} words, parallelism ${options.parallelism}, ` +
        `${options.taskManagers} task managers, shuffle ${shuffle}` +
        `${this.batch === undefined ? "" : ", batch mode (BLOCKING partitions, stage by stage)"}\n`,
    );
    process.on("SIGINT", this.onSignal);
    process.on("SIGTERM", this.onSignal);
    process.on("exit", this.onExit);
    try {
      const result = await this.execute(jobManager, job);
      const report = await this.finish(shuffle, jobManager, job, result);
      this.io.human.write(formatSummary(report));
      if (options.json) this.io.stdout.write(`${JSON.stringify(summaryJson(report))}\n`);
      return report.verified ? 0 : 1;
    } catch (error) {
      if (!(error instanceof JobFailedError)) {
        const isConfig = error instanceof ConfigurationError;
        this.recordFailure(
          0,
          isConfig
            ? (error as Error).message
            : `job manager error: ${(error as Error).stack ?? error}`,
          isConfig ? 2 : 1,
        );
      }
      return await this.reportFailure(shuffle);
    } finally {
      this.recovery?.stop();
      this.stopProgress();
      this.batch?.timeline?.stop();
      await this.dashboard?.close();
      await jobManager.close({ failed: true, timeoutMs: CANCEL_GRACE_MS });
      process.off("SIGINT", this.onSignal);
      process.off("SIGTERM", this.onSignal);
      process.off("exit", this.onExit);
    }
  }

  /**
   * Starts the cluster's job manager: the JobDeployer, and the control plane on 127.0.0.1 (one
   * command) or where `--bind` or `jobmanager.rpc.*` say.
   */
  private startJobManager(configuration: Configuration): Promise<JobManager> {
    const { options } = this;
    const bind = options.command === "local" ? { host: "127.0.0.1", port: 0 } : options.bind;
    return JobManager.start(configuration, {
      ...(bind === undefined ? {} : { bind }),
      loader: { applicationDirs: [APP_DIR] },
      applicationVersion: APP_VERSION,
      maxTaskManagers: options.taskManagers,
      onFatalError: (error) => this.recordFailure(1, `the shuffle master failed: ${error.message}`),
      onTaskManagerRegistered: (tm) => {
        const { host, dataPort, resourceId } = tm.location;
        this.say(`${tm.label} ready: data port ${host}:${dataPort}, resource ${resourceId}\n`);
        // Before any task is deployed there: the connection keeps the order.
        if (this.throttle !== null) {
          tm.notify(THROTTLE_MESSAGE, { recordsPerSecond: this.throttle });
        }
      },
      onTaskManagerLost: (tm, cause) => {
        this.lost.add(tm);
        // One that runs no task of the job (it registered and dropped before the job started)
        // only leaves the pool: the job waits for, or runs on, the others.
        if (!this.execution?.executionVertices.some((v) => v.gateway === tm)) {
          this.io.stderr.write(
            `warning: ${cause.message}; it ran no task of the job and is dropped from the pool\n`,
          );
          this.survived.add(tm);
          return;
        }
        // A job that restarts without it (from its latest checkpoint) has not failed.
        if (this.recovery?.taskManagerLost(tm)) this.survived.add(tm);
        else this.recordFailure(1, cause.message);
      },
      onApplicationMessage: (tm, name, payload) => {
        if (name !== METRIC_ENDPOINTS_MESSAGE) {
          throw new ConfigurationError(`${tm.label} sent an unknown message ${name}`);
        }
        for (const { reporter, url } of MetricEndpointsSchema.parse(payload).endpoints) {
          this.say(`${tm.label} metrics (${reporter}): ${url}\n`);
        }
        return undefined;
      },
      onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`),
    });
  }

  // ------------------------------------------------------------------------------ the job

  private async execute(jobManager: JobManager, job: WordCountJob): Promise<JobResult> {
    const { options } = this;
    for (const { reporter, url } of reporterEndpoints(
      jobManager.deployer.metricGroup.registry.reporters,
    )) {
      this.say(`job manager metrics (${reporter}): ${url}\n`);
    }
    this.dashboard = await this.startDashboard(jobManager, job);
    this.say(`dashboard: ${this.dashboard.url}\n`);
    if (options.command === "local") {
      this.local = LocalTaskManagers.start(
        options.taskManagers,
        { host: "127.0.0.1", port: jobManager.port },
        configArguments(options),
        (child, code, signal, error) => this.onLocalExit(child, code, signal, error),
      );
    } else {
      this.say(
        `job manager listening on ${jobManager.url}: waiting for ${options.taskManagers} task managers ` +
          `(pnpm demo -- taskmanager --jobmanager <this host>:${jobManager.port})\n`,
      );
    }
    // A standalone job manager waits `slot.request.timeout`; the timeout's error names the task
    // managers it refused, and why (another plugin or version), which is a configuration error.
    await this.phase(
      jobManager
        .waitForTaskManagers(
          options.taskManagers,
          ...(options.command === "local" ? [STARTUP_TIMEOUT_MS] : []),
        )
        .catch((error: unknown) => {
          if (!isSluiceError(error, ErrorCodes.TIMEOUT)) throw error;
          this.recordFailure(2, error.message);
          throw new JobFailedError();
        }),
    );

    // Subtask i of each vertex runs on task manager i mod N.
    const execution = await jobManager.deploy(job.graph);
    this.execution = execution;
    this.jobState = "RUNNING";
    this.startedAt = performance.now();
    this.recovery?.jobStarted({
      jobManager,
      local: this.local,
      execution,
      say: (text) => this.say(text),
    });
    if (this.batch !== undefined) {
      this.batch.timeline = new StageTimeline(() => execution.executionVertices, this.startedAt);
    }
    this.startProgress();
    const result = await this.phase(execution.terminated);
    this.jobState = result.status;
    this.endedAt = performance.now();
    if (result.error !== undefined) {
      this.jobRootCause =
        result.failedTask === undefined
          ? result.error.message
          : `${result.failedTask}: ${result.error.message}`;
    }
    if (result.status !== "FINISHED") {
      const cause =
        result.error === undefined
          ? `the job ended ${result.status}`
          : describeThrowable(serializeThrowable(result.error));
      const where = result.failedTaskLocation?.resourceId;
      const on =
        where === undefined
          ? ""
          : ` on ${jobManager.taskManagers.find((tm) => tm.location.resourceId.equals(where))?.label ?? `TaskExecutor ${where}`}`;
      const task = result.failedTask === undefined ? "" : `task ${result.failedTask}${on} failed: `;
      this.recordFailure(3, `${task}${cause}`);
      throw new JobFailedError();
    }
    return result;
  }

  /** The job finished: shut the task managers down cleanly, verify, build the report. */
  private async finish(
    shuffle: string,
    jobManager: JobManager,
    job: WordCountJob,
    result: JobResult,
  ): Promise<JobReport> {
    const durationMs = performance.now() - this.startedAt;
    const differences: string[] = [];
    const counts: Map<string, number>[] = [];
    this.fetcher.stop();
    // Every task returned its final counters (and a count task its counts) with its result.
    for (const vertex of this.execution?.executionVertices ?? []) {
      const returned = vertex.result as { progress?: unknown; counts?: [string, number][] };
      const progress = TaskProgressSchema.safeParse(returned?.progress);
      if (!progress.success) {
        differences.push(`${vertex.name} returned no final counters`);
        continue;
      }
      this.setProgress(progress.data, (vertex.gateway as RegisteredTaskManager).index);
      if (vertex.vertex.name === COUNT_VERTEX) counts.push(new Map(returned.counts ?? []));
    }
    this.view?.update(this.snapshot(), true);
    this.stopProgress();
    const taskManagers = jobManager.taskManagers;
    const batch = await this.batchSummary(taskManagers);
    if (batch !== undefined) differences.push(...batchDifferences(batch, COUNT_VERTEX));
    await this.phase(
      this.shutDownTaskManagers("the job finished", false),
      SHUTDOWN_TIMEOUT_MS,
      "the task managers to shut down",
    );
    if (this.local !== undefined) {
      await this.phase(this.local.allExited(), SHUTDOWN_TIMEOUT_MS, "the task managers to exit");
    }

    const atLeastOnce = this.recovery?.settings.mode === "AT_LEAST_ONCE";
    const reference = referenceCounts(job.corpus);
    const verification = atLeastOnce
      ? verifyAtLeastOnce(reference, counts, job.maxParallelism)
      : { ...verifyCounts(reference, counts, job.maxParallelism), duplicates: 0 };
    const { duplicates } = verification;
    const tasks = [...this.progress.values()];
    const records = tasks.filter((t) => t.kind === "count").reduce((sum, t) => sum + t.records, 0);
    const emitted = tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.records, 0);
    differences.push(...verification.differences);
    if (emitted !== job.corpus.records || records !== job.corpus.records + duplicates) {
      differences.unshift(
        `the sources emitted ${formatInteger(emitted)} and the counters received ${formatInteger(records)} words; the corpus has ${formatInteger(job.corpus.records)}`,
      );
    }
    for (const error of result.releaseErrors) {
      differences.push(`releasing the job's partitions failed: ${error.message}`);
    }
    const processes: ProcessReport[] = [
      { role: "jobmanager", pid: process.pid, peakRssMb: process.resourceUsage().maxRSS / 1024 },
      ...taskManagers.map((tm) => {
        const closed = this.shutdownReports.get(tm);
        const lost = this.lost.has(tm);
        if (closed === undefined && !lost) {
          differences.push(`${tm.label} did not report its shutdown`);
        }
        return {
          role: "taskmanager" as const,
          index: tm.index,
          pid: tm.pid,
          ...(lost ? { lost } : {}),
          peakRssMb: this.peakRssMbOf(tm),
          ...(closed?.networkBuffers == null ? {} : { bufferPool: closed.networkBuffers }),
          unreleasedPartitions: closed?.unreleasedPartitions ?? 0,
        };
      }),
    ];
    return {
      shuffle,
      shuffleModule: jobManager.deployer.plugin.file,
      verified: differences.length === 0,
      differences,
      records,
      // A blocking partition writes its last sort buffer after its task returned its counters.
      bytes:
        batch === undefined
          ? tasks.filter((t) => t.kind === "source").reduce((sum, t) => sum + t.bytes, 0)
          : batchTotals(batch).partitionBytes,
      durationMs,
      parallelism: this.options.parallelism,
      taskManagers: taskManagers.length,
      distinctWords: verification.distinctWords,
      tasks,
      processes,
      ...recoveryReport(result, this.recovery, duplicates),
      ...(batch === undefined ? {} : { batch }),
    };
  }

  /**
   * Records a task's counters. Keyed by operator and subtask, so that a restarted attempt's
   * counters replace those of the attempt before it.
   */
  private setProgress(task: TaskProgress, taskManager: number): void {
    this.progress.set(`${task.kind} ${task.subtaskIndex}`, { ...task, taskManager });
  }

  /**
   * Batch mode: when each stage ran, and what every task manager's blocking partitions wrote and
   * deleted (each waits until its released partitions' files are gone).
   */
  private async batchSummary(
    taskManagers: readonly RegisteredTaskManager[],
  ): Promise<BatchSummary | undefined> {
    const batch = this.batch;
    if (batch === undefined) return undefined;
    const stages = batch.timeline?.stop() ?? [];
    const reports: BatchShuffleReport[] = [];
    for (const tm of taskManagers) {
      const reply = await this.phase(
        tm.call(BATCH_SHUFFLE_MESSAGE, null),
        SHUTDOWN_TIMEOUT_MS * 2,
        `${tm.label}'s batch shuffle report`,
      );
      if (reply === null) {
        throw new ConfigurationError(
          `the shuffle plugin of ${tm.label} registers no Status.Shuffle.Netty.BatchShuffle metrics; batch mode reports them`,
        );
      }
      reports.push(BatchShuffleReportSchema.parse(reply));
    }
    return { codec: batch.codec, taskManagers: reports, stages };
  }

  /** A task manager's peak RSS from its shutdown report (0 without one). */
  private peakRssMbOf(tm: RegisteredTaskManager): number {
    const extras = ShutdownExtrasSchema.safeParse(this.shutdownReports.get(tm)?.application);
    return extras.success ? extras.data.peakRssMb : 0;
  }

  // ---------------------------------------------------------------------------- dashboard

  private startDashboard(jobManager: JobManager, job: WordCountJob): Promise<WebMonitorEndpoint> {
    return startDashboard({
      configuration: jobManager.configuration,
      fetcher: this.fetcher,
      status: () => ({
        graph: job.graph,
        execution: this.execution,
        state: this.jobState,
        rootCause: this.jobRootCause,
        elapsedSeconds:
          this.execution === undefined
            ? 0
            : ((this.endedAt ?? performance.now()) - this.startedAt) / 1000,
        totalRecords: this.options.records,
        records: [...this.progress.values()]
          .filter((task) => task.kind === "count")
          .reduce((sum, task) => sum + task.records, 0),
        throttle: this.throttle,
        shuffle: jobManager.plugin.reference,
      }),
      onThrottle: (recordsPerSecond) => {
        this.throttle = recordsPerSecond;
        this.say(
          recordsPerSecond === null
            ? "throttle lifted\n"
            : `throttle: ${formatInteger(recordsPerSecond)} words/s per counter\n`,
        );
        for (const tm of jobManager.taskManagers) {
          if (tm.connected) tm.notify(THROTTLE_MESSAGE, { recordsPerSecond });
        }
      },
      onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`),
    });
  }

  /** Tells every task manager still connected that the job ended; collects their reports. */
  private async shutDownTaskManagers(reason: string, failed: boolean): Promise<void> {
    const jobManager = this.jobManager as JobManager;
    for (const tm of jobManager.taskManagers) {
      if (tm.connected) this.expectedExit.set(tm.pid, failed ? 1 : 0);
    }
    const outcomes = await jobManager.shutDownTaskManagers({
      reason,
      failed,
      timeoutMs: failed ? CANCEL_GRACE_MS : SHUTDOWN_TIMEOUT_MS,
    });
    for (const [tm, outcome] of outcomes) {
      if (!(outcome instanceof Error)) this.shutdownReports.set(tm, outcome);
      else if (!failed) {
        this.recordFailure(2, `${tm.label} failed to shut down: ${outcome.message}`);
      }
    }
  }

  // --------------------------------------------------------------------- local processes

  private onLocalExit(
    child: LocalTaskManager,
    code: number | null,
    signal: NodeJS.Signals | null,
    error?: Error,
  ): void {
    if (signal !== null && signal === child.killSignal) return;
    const registered = this.jobManager?.taskManagers.find((tm) => tm.pid === child.pid);
    const label = registered?.label ?? `task manager (pid ${child.pid})`;
    if (error !== undefined) {
      this.recordFailure(0, `${label} could not be started or signalled: ${error.message}`);
      return;
    }
    // One the job went on without was judged when it was lost: its exit, say on waking from a
    // pause, decides nothing more. The exit of one whose loss failed the job still names how it
    // ended (a signal says more than the closed connection that was noticed first).
    if (registered !== undefined && this.survived.has(registered)) return;
    const expected = this.expectedExit.get(child.pid);
    if (signal !== null) this.recordFailure(0, `${label} was killed by signal ${signal}`);
    else if (expected === undefined) {
      // A task manager exits 2 for a bad configuration or plugin: so does the demo.
      this.recordFailure(2, `${label} exited unexpectedly with code ${code}`, code === 2 ? 2 : 1);
    } else if (code !== expected && code !== 0) {
      this.recordFailure(2, `${label} exited with code ${code} while shutting down`);
    }
  }

  // ---------------------------------------------------------------------------- failures

  private recordFailure(rank: number, message: string, exitCode = 1): void {
    if (this.failures.some((f) => f.message === message)) return;
    this.failures.push({ rank, message, exitCode });
    if (this.failures.length === 1) this.failed.reject(new JobFailedError());
  }

  /** Awaits `promise`, failing fast when the job fails, and after `timeoutMs` if given. */
  private async phase<T>(promise: Promise<T>, timeoutMs?: number, what?: string): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout =
      timeoutMs === undefined
        ? undefined
        : new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              this.recordFailure(2, `timed out after ${timeoutMs / 1000} s waiting for ${what}`);
              reject(new JobFailedError());
            }, timeoutMs);
          });
    try {
      return await Promise.race([
        promise,
        this.failed.promise,
        ...(timeout === undefined ? [] : [timeout]),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  private interrupted(signal: NodeJS.Signals): void {
    if (this.interruptedBy !== undefined) {
      // A second signal while tearing down: stop waiting.
      this.local?.killAll("SIGKILL");
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    this.interruptedBy = signal;
    this.recordFailure(-1, `interrupted by ${signal}`, signal === "SIGINT" ? 130 : 143);
  }

  /**
   * Ends the job (its tasks are canceled), tells every task manager still reachable to shut down
   * (they exit non-zero), kills local ones that do not exit in time, and reports the failure.
   */
  private async reportFailure(shuffle: string): Promise<number> {
    this.stopProgress();
    const [first, ...rest] = [...this.failures].sort((a, b) => a.rank - b.rank);
    const failure = first as Failure;
    const execution = this.execution;
    if (execution !== undefined) {
      // No-op when the job already failed; otherwise (interrupted, timed out) its tasks stop.
      execution.cancel(failure.message);
      await settlesWithin(execution.terminated, CANCEL_GRACE_MS);
    }
    await settlesWithin(this.shutDownTaskManagers(failure.message, true), CANCEL_GRACE_MS);
    const local = this.local;
    if (local !== undefined && !(await settlesWithin(local.allExited(), CANCEL_GRACE_MS))) {
      local.killAll("SIGKILL");
      await settlesWithin(local.allExited(), CANCEL_GRACE_MS);
    }
    // Failures recorded while stopping (a child's exit code) belong to the report too.
    const [head, ...others] = [...this.failures].sort((a, b) => a.rank - b.rank);
    const root = head ?? failure;
    const lines = [
      `error: the job failed: ${root.message}`,
      ...(others.length > 0 ? others : rest).map((f) => `  also: ${f.message}`),
    ];
    if (local !== undefined) {
      const alive = local.processes.filter((p) => !p.exited);
      lines.push(
        alive.length === 0
          ? `all ${local.processes.length} task manager processes have exited`
          : `could not stop task managers with pids ${alive.map((p) => p.pid).join(", ")}`,
      );
    } else {
      const registered = this.jobManager?.taskManagers ?? [];
      const stopped = registered.filter((tm) => this.shutdownReports.has(tm)).length;
      lines.push(
        `${stopped} of ${registered.length} registered task managers shut down on request; ${this.lost.size} were lost`,
      );
    }
    this.io.stderr.write(`${lines.join("\n")}\n`);
    if (this.options.json) {
      this.io.stdout.write(
        `${JSON.stringify({
          verified: false,
          error: root.message,
          shuffle,
          processes: [
            {
              role: "jobmanager",
              pid: process.pid,
              peakRssMb: round1(process.resourceUsage().maxRSS / 1024),
            },
            ...(this.jobManager?.taskManagers ?? []).map((tm) => ({
              role: "taskmanager",
              index: tm.index,
              pid: tm.pid,
              peakRssMb: round1(this.peakRssMbOf(tm)),
            })),
          ],
        })}\n`,
      );
    }
    return root.exitCode;
  }

  // ----------------------------------------------------------------------------- progress

  private startProgress(): void {
    this.fetcher.start(METRICS_FETCH_MS);
    this.view = createProgressView(this.io.human);
    this.renderTimer = setInterval(() => this.view?.update(this.snapshot()), PROGRESS_RENDER_MS);
  }

  private snapshot(): ProgressSnapshot {
    return {
      elapsedMs: performance.now() - this.startedAt,
      totalRecords: this.options.records,
      tasks: [...this.progress.values()],
    };
  }

  private stopProgress(): void {
    this.fetcher.stop();
    clearInterval(this.renderTimer);
    this.renderTimer = undefined;
    this.view?.stop();
    this.view = undefined;
  }

  private say(text: string): void {
    this.io.human.write(text);
  }
}

/** What the summary reports about checkpoints and the restart. */
function recoveryReport(
  result: JobResult,
  recovery: Recovery | undefined,
  duplicates: number,
): Pick<JobReport, "checkpointing" | "restarts" | "killedTaskManager"> {
  const mode = recovery?.settings.mode;
  const killed = recovery?.killedTaskManager;
  const { completed, aborted, restoredFrom, restoredPersistedDataBytes, latest } =
    result.checkpoints;
  return {
    restarts: result.restarts,
    ...(mode === undefined
      ? {}
      : {
          checkpointing: {
            mode,
            completed,
            aborted,
            ...(restoredFrom === undefined
              ? {}
              : {
                  restoredFrom: Number(restoredFrom),
                  restoredChannelStateBytes: restoredPersistedDataBytes ?? 0,
                }),
            ...(latest === undefined
              ? {}
              : { lastAlignmentMs: latest.alignmentDurationNanos / 1e6 }),
            ...(mode === "AT_LEAST_ONCE" ? { duplicates } : {}),
          },
        }),
    ...(killed === undefined ? {} : { killedTaskManager: killed }),
  };
}

/** The configuration arguments local task managers get: the same sources as this process. */
function configArguments(options: DemoOptions): string[] {
  return [
    ...(options.configFile === undefined ? [] : ["--config", options.configFile]),
    ...options.dynamicProperties,
    ...(options.shuffle === undefined ? [] : ["--shuffle", options.shuffle]),
  ];
}

function round1(value: number): number {
  return Math.round(value * 10) / 10;
}

/** True if `promise` settles within `ms`. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([
      promise.then(
        () => true,
        () => true,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
