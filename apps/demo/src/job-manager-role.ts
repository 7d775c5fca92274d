import {
  describeTaskManagerWait,
  JobManager,
  MetricFetcher,
  type RegisteredTaskManager,
  WebMonitorEndpoint,
} from "@sluice/cluster";
import { ConfigurationError, ErrorCodes, isSluiceError } from "@sluice/core";
import {
  type Configuration,
  describeThrowable,
  type JobExecution,
  type JobResult,
} from "@sluice/runtime";
import { loadConfigurationAndShufflePlugin, serializeThrowable } from "@sluice/runtime/plugin";
import { HighAvailabilityOptions, RestOptions } from "@sluice/runtime-api";
import { RemoteShuffleOptions } from "@sluice/shuffle-remote";
import {
  applyBatchDefaults,
  applyBatchRestartStrategy,
  type BatchSummary,
  batchDifferences,
  compressionCodecOf,
} from "./batch-mode.js";
import { collectBatchSummary } from "./batch-summary-collection.js";
import { applyCheckpointingFlags, recoverySettingsOf } from "./checkpointing-options.js";
import type { DemoOptions } from "./cli.js";
import {
  METRIC_ENDPOINTS_MESSAGE,
  MetricEndpointsSchema,
  reporterEndpoints,
  THROTTLE_MESSAGE,
} from "./control-messages.js";
import { APP_DIR, APP_VERSION, isUsageError, SHUFFLE_KEY } from "./demo-application.js";
import { formatInteger } from "./format.js";
import {
  type Failure,
  failureLines,
  JobFailedError,
  JobFailures,
  jobFailureMessage,
  settlesWithin,
} from "./job-failures.js";
import { JobReportBuilder } from "./job-report-builder.js";
import {
  awaitLeadership,
  fixedJobIdOf,
  isHighAvailability,
  JOB_RUNS_ON_LEADER,
} from "./leadership.js";
import { LocalTaskManagers } from "./local-task-managers.js";
import { checkParallelismFitsNetworkMemory } from "./parallelism-memory.js";
import { ProgressLoop } from "./progress-loop.js";
import { Recovery } from "./recovery.js";
import { announceShuffleWorkers, applyRemoteShuffleFlags } from "./remote-shuffle-workers.js";
import { ShuffleWorkerKill } from "./shuffle-worker-kill.js";
import { checkOutputDirectory, readCommittedOutput } from "./sink-options.js";
import { StageTimeline } from "./stage-timeline.js";
import { formatSummary, type JobReport, type SinkReport, summaryJson } from "./summary.js";
import { TaskManagerExits } from "./task-manager-exits.js";
import { subtaskName, taskProgressOf } from "./task-metrics.js";
import { COUNT_VERTEX, SOURCE_VERTEX, type WordCountJob, wordCountJob } from "./word-count-job.js";

/** How long local task managers may take to start and register. */
const STARTUP_TIMEOUT_MS = 30_000;
/** How long a clean shutdown may take. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** After a failure: how long the job's tasks and the task managers get before they are killed. */
const CANCEL_GRACE_MS = 3_000;

/** The streams the demo writes to. */
export interface DemoIO {
  /** Machine-readable output (`--json`). */
  readonly stdout: NodeJS.WriteStream;
  /** Human-readable output: stdout, or stderr with `--json`. */
  readonly human: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * The demo's job manager role (`main.js jobmanager`, and the job manager of the one-command demo):
 * a `JobManager` of @sluice/cluster that waits for its task managers (started here as child
 * processes in the one-command mode, anywhere in the standalone mode), deploys the word count onto
 * them, follows its progress from the task managers' reports on the application channel,
 * verifies the counts and shuts every task manager down, on every path.
 */
export class JobManagerRole {
  private readonly failures = new JobFailures();
  /** The tasks' counters, the task managers' shutdown reports and losses: the job's report. */
  private readonly report = new JobReportBuilder();
  /** The task managers' metrics: the source of the progress line, the table and the dashboard. */
  private readonly fetcher = new MetricFetcher(
    () => this.jobManager?.taskManagers ?? [],
    (subtasks) => {
      // A later attempt of a subtask replaces an earlier one still reporting.
      const byAttempt = [...subtasks].sort((a, b) => a.attemptNumber - b.attemptNumber);
      for (const subtask of byAttempt) {
        const name = subtaskName(subtask, this.options.parallelism);
        this.report.setProgress(taskProgressOf(subtask, name, false), subtask.taskManager);
      }
    },
  );
  private dashboard: WebMonitorEndpoint | undefined;
  /** The counters' throttle of `--throttle` (words/s per count subtask), set before they run. */
  private readonly throttle: number | null;
  /** Which losses and exits of task managers the job survives. */
  private readonly exits = new TaskManagerExits(this.failures, (text) =>
    this.io.stderr.write(text),
  );
  private jobManager: JobManager | undefined;
  private execution: JobExecution | undefined;
  /** Whether the job managers run under high availability (not `none`). */
  private highAvailability = false;
  /** Failovers of the job so far, as printed. */
  private failovers = 0;
  private local: LocalTaskManagers | undefined;
  private recovery: Recovery | undefined;
  private startedAt = 0;
  /** The progress line, from the fetched metrics. */
  private readonly progress: ProgressLoop;
  private interruptedBy: NodeJS.Signals | undefined;
  /** Batch mode: the codec of the blocking partitions, and when each stage ran. */
  private batch: { codec: string; timeline?: StageTimeline } | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => this.interrupted(signal);
  private readonly onExit = () => this.local?.killAll("SIGKILL");
  /** `--kill-shuffle-worker-after`, when given. */
  private shuffleWorkerKill: ShuffleWorkerKill | undefined;

  constructor(
    private readonly options: DemoOptions,
    private readonly io: DemoIO,
  ) {
    this.throttle = options.throttle ?? null;
    this.progress = new ProgressLoop(this.fetcher, io.human, () => ({
      elapsedMs: performance.now() - this.startedAt,
      totalRecords: this.options.records,
      tasks: this.report.tasks(),
      waiting: (this.jobManager?.taskManagerWaits ?? []).map((wait) =>
        describeTaskManagerWait(wait),
      ),
    }));
  }

  /** Runs the job; resolves with the process exit code. */
  async run(): Promise<number> {
    const { options } = this;
    let jobManager: JobManager;
    try {
      // Loaded with the plugin, so that the keys it owns are not reported as unknown.
      const { configuration, shuffle: plugin } = await loadConfigurationAndShufflePlugin({
        ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
        args: options.dynamicProperties,
        overrides: {
          ...(options.shuffle === undefined ? {} : { [SHUFFLE_KEY]: options.shuffle }),
          ...(options.highAvailability === undefined
            ? {}
            : { [HighAvailabilityOptions.HA_MODE.key]: options.highAvailability }),
        },
        loader: { applicationDirs: [APP_DIR] },
      });
      applyCheckpointingFlags(configuration, options);
      applyRemoteShuffleFlags(configuration, plugin, options);
      if (options.mode === "streaming") {
        checkParallelismFitsNetworkMemory(configuration, options.parallelism, options.taskManagers);
      }
      const kills =
        options.killTaskManagerAfterMs !== undefined ||
        options.killTaskManagerBetweenStages ||
        options.killShuffleWorkerAfterMs !== undefined;
      // Under high availability a standby checks it once it knows whether it recovers a job,
      // whose part files the folder holds.
      if (options.output !== undefined && !isHighAvailability(configuration)) {
        await checkOutputDirectory(options.output, (message) => new ConfigurationError(message));
      }
      if (options.mode === "batch") {
        applyBatchDefaults(configuration);
        this.batch = { codec: compressionCodecOf(configuration) };
        const strategy = kills ? applyBatchRestartStrategy(configuration) : undefined;
        if (strategy !== undefined) this.say(`${strategy}\n`);
      }
      this.recovery = new Recovery(recoverySettingsOf(configuration), {
        afterMs: options.killTaskManagerAfterMs,
        betweenStages: options.killTaskManagerBetweenStages,
        ...(options.mode === "batch"
          ? { batch: { sources: SOURCE_VERTEX, counters: COUNT_VERTEX } }
          : {}),
        ...(options.output === undefined
          ? {}
          : { sink: { directory: options.output, counters: COUNT_VERTEX } }),
      });
      if (options.killShuffleWorkerAfterMs !== undefined) {
        this.shuffleWorkerKill = new ShuffleWorkerKill(options.killShuffleWorkerAfterMs, {
          sources: SOURCE_VERTEX,
          counters: COUNT_VERTEX,
        });
      }
      jobManager = await this.startJobManager(configuration);
      this.highAvailability = await awaitLeadership(jobManager, configuration, (text) =>
        this.say(text),
      );
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
    let job: WordCountJob;
    try {
      job = wordCountJob(this.jobOptions, fixedJobIdOf(jobManager.configuration));
      // Under high availability the library took the job over from the previous leader (same
      // id), from its latest stored checkpoint; its part files are in the sink's folder.
      const known = this.highAvailability ? await jobManager.getJob(job.graph.jobId) : undefined;
      if (known?.execution === undefined && known !== undefined) {
        const ended = await known.result;
        this.say(`job ${job.graph.jobId} ended ${ended.status} under a previous leader\n`);
        await jobManager.close({ timeoutMs: CANCEL_GRACE_MS });
        return ended.status === "FINISHED" ? 0 : 1;
      }
      if (known?.execution !== undefined) {
        const restored = known.execution.latestRestore?.checkpoint.checkpointId;
        this.say(
          `recovering job ${job.graph.jobId} left by the previous leader, ${restored === undefined ? "from the start (no checkpoint was stored)" : `from checkpoint ${restored}`}\n`,
        );
      } else if (options.output !== undefined) {
        await checkOutputDirectory(options.output, (message) => new ConfigurationError(message));
      }
    } catch (error) {
      if (error instanceof ConfigurationError) {
        this.io.stderr.write(`error: ${error.message}\n`);
        await jobManager.close({ failed: true, timeoutMs: CANCEL_GRACE_MS });
        return 2;
      }
      this.io.stderr.write(`error: cannot recover the job: ${(error as Error).message}\n`);
      await jobManager.close({ failed: true, timeoutMs: CANCEL_GRACE_MS });
      return 1;
    }
    this.say(
      `Sluice demo: word count of ${formatInteger(options.records)} words, parallelism ${options.parallelism}, ` +
        `${options.taskManagers} task managers, shuffle ${shuffle}` +
        `${this.batch === undefined ? "" : ", batch mode (BLOCKING partitions, stage by stage)"}\n`,
    );
    announceShuffleWorkers(
      jobManager.deployer.master,
      jobManager.configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS),
      (line) => this.say(line),
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
        this.failures.record(
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
      this.shuffleWorkerKill?.stop();
      this.progress.stop();
      this.batch?.timeline?.stop();
      await this.dashboard?.close();
      await jobManager.close({ failed: true, timeoutMs: CANCEL_GRACE_MS });
      process.off("SIGINT", this.onSignal);
      process.off("SIGTERM", this.onSignal);
      process.off("exit", this.onExit);
    }
  }

  /** What the word count is built from: the demo's options, its file sink writing to `--output`. */
  private get jobOptions(): Parameters<typeof wordCountJob>[0] {
    return { ...this.options, sinkDirectory: this.options.output };
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
      // Standalone, task managers beyond the job's are turned away. Local ones are all this
      // process's children: one that comes back after a replacement was started is let in.
      ...(options.command === "local" ? {} : { maxTaskManagers: options.taskManagers }),
      onFatalError: (error) =>
        this.failures.record(1, `the shuffle master failed: ${error.message}`),
      onLeadershipRevoked: () =>
        this.failures.record(
          1,
          "this job manager lost its leadership (its etcd lease expired): another job manager leads now",
        ),
      onTaskManagerRegistered: (tm) => {
        const { host, dataPort, resourceId } = tm.location;
        this.say(`${tm.label} ready: data port ${host}:${dataPort}, resource ${resourceId}\n`);
        // Before any task is deployed there: the connection keeps the order.
        if (this.throttle !== null) {
          tm.notify(THROTTLE_MESSAGE, { recordsPerSecond: this.throttle });
        }
      },
      onTaskManagerLost: (tm, cause) => {
        this.report.lost.add(tm);
        this.exits.lost(tm, cause, this.execution, this.recovery);
      },
      // A job that cannot run says what it waits for, and how long it will.
      onTaskManagerWait: (wait, phase) => this.say(`${describeTaskManagerWait(wait, phase)}\n`),
      onApplicationMessage: (tm, name, payload) => {
        if (name !== METRIC_ENDPOINTS_MESSAGE) {
          throw new ConfigurationError(`${tm.label} sent an unknown message ${name}`);
        }
        for (const { reporter, url } of MetricEndpointsSchema.parse(payload).endpoints) {
          this.say(`${tm.label} metrics (${reporter}): ${url}\n`);
        }
        return undefined;
      },
      // Every failover is printed with its cause, also of a job taken over from a previous
      // leader: a job that restarts again and again (a full disk) must not loop silently.
      jobStatusListener: (_jobId, status, cause) => {
        if (status !== "RESTARTING") return;
        const why = cause === undefined ? "" : `: ${describeThrowable(serializeThrowable(cause))}`;
        this.say(`the job fails over (restart ${++this.failovers})${why}\n`);
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
    // The library's endpoint, for any job; the demo's pages refresh every second.
    if (!jobManager.configuration.contains(RestOptions.WEB_REFRESH_INTERVAL)) {
      jobManager.configuration.set(RestOptions.WEB_REFRESH_INTERVAL, 1000);
    }
    this.dashboard = await WebMonitorEndpoint.start(jobManager, {
      metricFetcher: this.fetcher,
      onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`),
    });
    this.say(`dashboard: ${this.dashboard.url}\n`);
    if (options.command === "local") {
      this.local = LocalTaskManagers.start(
        options.taskManagers,
        { host: "127.0.0.1", port: jobManager.port },
        configArguments(options),
        (child, code, signal, error) =>
          this.exits.localExited(
            child,
            code,
            signal,
            error,
            this.jobManager?.taskManagers.find((tm) => tm.pid === child.pid),
          ),
      );
    } else {
      this.say(
        `job manager listening on ${jobManager.url}: waiting for ${options.taskManagers} task managers ` +
          `(pnpm demo -- taskmanager --jobmanager <this host>:${jobManager.port})\n`,
      );
    }
    // A standalone job manager waits `slot.request.timeout`; the timeout's error names the task
    // managers it refused, and why (another plugin or version), which is a configuration error.
    await this.failures.phase(
      jobManager
        .waitForTaskManagers(
          options.taskManagers,
          ...(options.command === "local" ? [STARTUP_TIMEOUT_MS] : []),
        )
        .catch((error: unknown) => {
          if (!isSluiceError(error, ErrorCodes.TIMEOUT)) throw error;
          this.failures.record(2, error.message);
          throw new JobFailedError();
        }),
    );

    // Subtask i of each vertex runs on task manager i mod N. Under high availability the job
    // manager keeps the job in the stores, and a leader elected next takes it over by itself:
    // this is the execution it took over, when it did.
    const execution = await jobManager.deploy(job.graph);
    this.execution = execution;
    if (this.highAvailability) {
      // The launcher of --job-managers times a failover's recovery by this line.
      this.say(`${JOB_RUNS_ON_LEADER} ${jobManager.url}\n`);
    }
    this.startedAt = performance.now();
    this.recovery?.jobStarted({
      jobManager,
      local: this.local,
      execution,
      say: (text) => this.say(text),
    });
    this.shuffleWorkerKill?.jobStarted(execution, jobManager.deployer.master, (text) =>
      this.say(text),
    );
    if (this.batch !== undefined) {
      this.batch.timeline = new StageTimeline(() => execution.executionVertices, this.startedAt);
    }
    this.progress.start();
    const result = await this.failures.phase(execution.terminated);
    if (result.status !== "FINISHED") {
      this.failures.record(3, jobFailureMessage(result, jobManager.taskManagers));
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
    this.fetcher.stop();
    // Every task returned its final counters (and a count task its counts) with its result.
    const counts = this.report.takeFinalCounters(
      this.execution?.executionVertices ?? [],
      differences,
    );
    this.progress.finish();
    const taskManagers = jobManager.taskManagers;
    const batch = await this.batchSummary(taskManagers);
    if (batch !== undefined) differences.push(...batchDifferences(batch, COUNT_VERTEX));
    await this.failures.phase(this.shutDownTaskManagers("the job finished", false), {
      ms: SHUTDOWN_TIMEOUT_MS,
      what: "the task managers to shut down",
    });
    if (this.local !== undefined) {
      await this.failures.phase(this.local.allExited(), {
        ms: SHUTDOWN_TIMEOUT_MS,
        what: "the task managers to exit",
      });
    }

    // With the file sink, what left the job is verified: the committed part files.
    const output = this.options.output;
    let sink: SinkReport | undefined;
    let verifiedCounts = counts;
    if (output !== undefined) {
      const committed = await readCommittedOutput(output, this.options.parallelism);
      differences.push(...committed.differences);
      verifiedCounts = committed.countsBySubtask;
      sink = {
        directory: output,
        committedFiles: committed.committedFiles,
        committedBytes: committed.committedBytes,
        abortedTransactions: (this.execution?.executionVertices ?? []).reduce(
          (sum, vertex) =>
            sum + ((vertex.result as { abortedTransactions?: number })?.abortedTransactions ?? 0),
          0,
        ),
      };
    }

    return this.report.build({
      shuffle,
      shuffleModule: jobManager.deployer.plugin.file,
      job,
      result,
      taskManagers,
      counts: verifiedCounts,
      differences,
      durationMs,
      parallelism: this.options.parallelism,
      recovery: this.recovery,
      batch,
      sink,
    });
  }

  /**
   * Batch mode: when each stage ran, and what every task manager's blocking partitions wrote and
   * deleted (each waits until its released partitions' files are gone); a lost one is left out.
   */
  private async batchSummary(
    taskManagers: readonly RegisteredTaskManager[],
  ): Promise<BatchSummary | undefined> {
    const batch = this.batch;
    if (batch === undefined) return undefined;
    return collectBatchSummary({
      codec: batch.codec,
      stages: batch.timeline?.stop() ?? [],
      taskManagers,
      lost: this.report.lost,
      failures: this.failures,
      timeoutMs: SHUTDOWN_TIMEOUT_MS * 2,
      master: this.jobManager?.deployer.master,
    });
  }

  /** Tells every task manager still connected that the job ended; collects their reports. */
  private async shutDownTaskManagers(reason: string, failed: boolean): Promise<void> {
    const jobManager = this.jobManager as JobManager;
    for (const tm of jobManager.taskManagers) {
      if (tm.connected) this.exits.expectExit(tm.pid, failed ? 1 : 0);
    }
    const outcomes = await jobManager.shutDownTaskManagers({
      reason,
      failed,
      timeoutMs: failed ? CANCEL_GRACE_MS : SHUTDOWN_TIMEOUT_MS,
    });
    for (const [tm, outcome] of outcomes) {
      if (!(outcome instanceof Error)) this.report.shutdownReports.set(tm, outcome);
      else if (!failed) {
        this.failures.record(2, `${tm.label} failed to shut down: ${outcome.message}`);
      }
    }
  }

  // ---------------------------------------------------------------------------- failures

  private interrupted(signal: NodeJS.Signals): void {
    if (this.interruptedBy !== undefined) {
      // A second signal while tearing down: stop waiting.
      this.local?.killAll("SIGKILL");
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    this.interruptedBy = signal;
    this.failures.record(-1, `interrupted by ${signal}`, signal === "SIGINT" ? 130 : 143);
  }

  /**
   * Ends the job (its tasks are canceled), tells every task manager still reachable to shut down
   * (they exit non-zero), kills local ones that do not exit in time, and reports the failure.
   */
  private async reportFailure(shuffle: string): Promise<number> {
    this.progress.stop();
    const [failure] = this.failures.byRank() as [Failure];
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
    const failures = this.failures.byRank() as [Failure, ...Failure[]];
    const root = failures[0];
    const registered = this.jobManager?.taskManagers ?? [];
    const lines = failureLines(
      failures,
      local !== undefined
        ? { local: local.processes }
        : {
            registered: registered.length,
            stopped: registered.filter((tm) => this.report.shutdownReports.has(tm)).length,
            lost: this.report.lost.size,
          },
    );
    this.io.stderr.write(`${lines.join("\n")}\n`);
    if (this.options.json) {
      this.io.stdout.write(
        `${JSON.stringify(this.report.failureJson(root.message, shuffle, registered))}\n`,
      );
    }
    return root.exitCode;
  }

  private say(text: string): void {
    this.io.human.write(text);
  }
}

/** The configuration arguments local task managers get: the same sources as this process. */
export function configArguments(options: DemoOptions): string[] {
  return [
    ...(options.configFile === undefined ? [] : ["--config", options.configFile]),
    ...options.dynamicProperties,
    ...(options.shuffle === undefined ? [] : ["--shuffle", options.shuffle]),
    ...(options.highAvailability === undefined
      ? []
      : [`-D${HighAvailabilityOptions.HA_MODE.key}=${options.highAvailability}`]),
  ];
}
