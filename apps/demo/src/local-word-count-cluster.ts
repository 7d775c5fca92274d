import {
  describeTaskManagerWait,
  type JobDetailsInfo,
  LocalCluster,
  type LocalTaskManagerProcess,
  type ProcessExit,
  type RegisteredTaskManager,
  RestClusterClient,
  type ShutdownReport,
  type SluiceProcess,
  WebMonitorEndpoint,
} from "@sluice/cluster";
import { ErrorCodes, isSluiceError } from "@sluice/core";
import { type KilledTaskManager, ShuffleWorkerKill, TaskManagerKill } from "@sluice/harness";
import { describeThrowable, type JobExecution } from "@sluice/runtime";
import { serializeThrowable } from "@sluice/runtime/plugin";
import { RemoteShuffleOptions } from "@sluice/shuffle-remote";
import {
  type BatchSummary,
  batchDifferences,
  batchShuffleReports,
  stagesOf,
} from "./batch-mode.js";
import type { DemoOptions } from "./cli.js";
import { formatDuration } from "./format.js";
import { JobFailedError, type JobFailures } from "./job-failures.js";
import type { ListedTaskManager } from "./job-report.js";
import { announceShuffleWorkers, shuffleWorkerReports } from "./remote-shuffle-workers.js";
import { COMMITTED_PART_FILE } from "./sink-options.js";
import type { ProcessReport } from "./summary.js";
import {
  type ClusterEnd,
  type DemoConfiguration,
  headerOf,
  JOB_MODULE_DIR,
  type WordCountCluster,
} from "./word-count-cluster.js";
import { COUNT_VERTEX, SOURCE_VERTEX } from "./word-count-job.js";

/** How long the task managers may take to start and register. */
const STARTUP_TIMEOUT_MS = 30_000;
/** How long a clean shutdown of the task managers may take. */
const SHUTDOWN_TIMEOUT_MS = 10_000;
/** After a failure: how long the task managers get to report before they are dropped. */
const CANCEL_GRACE_MS = 3_000;

/** Where the demo writes. */
export interface DemoIO {
  /** Machine-readable output (`--json`). */
  readonly stdout: NodeJS.WriteStream;
  /** Human-readable output: stdout, or stderr with `--json`. */
  readonly human: NodeJS.WriteStream;
  readonly stderr: NodeJS.WriteStream;
}

/**
 * The demo's cluster on this host: a {@link LocalCluster} (the job manager in this process, the
 * task managers as `sluice taskmanager` processes loading the job module from the demo's
 * `dist/`) with its REST endpoint and dashboard, the processes' lines on this one's output, the
 * kills of `--kill-*`, and the judgement of each task manager's end: a loss the job survives (it
 * ran no task of it, or the job restarts, with a replacement the cluster starts) is no failure;
 * any other loss or exit fails the run.
 */
export class LocalWordCountCluster implements WordCountCluster {
  readonly shuffle: string;
  readonly shuffleModule: string | undefined;
  readonly recovery: DemoConfiguration["recovery"];
  readonly taskManagers: number;
  private execution: JobExecution | undefined;
  /** Task managers lost while the job went on without them. */
  private readonly survived = new Set<RegisteredTaskManager>();
  private readonly lost = new Set<RegisteredTaskManager>();
  /** The job's newest completed checkpoint when a task manager was first lost. */
  private latestAtLoss: bigint | undefined;
  private failovers = 0;
  private shuttingDown = false;
  private taskManagerKill: TaskManagerKill | undefined;
  private shuffleWorkerKill: ShuffleWorkerKill | undefined;
  private cluster!: LocalCluster;
  private endpoint!: WebMonitorEndpoint;
  private client!: RestClusterClient;

  private constructor(
    private readonly options: DemoOptions,
    private readonly config: DemoConfiguration,
    private readonly io: DemoIO,
    private readonly failures: JobFailures,
  ) {
    this.shuffle = config.shuffle;
    this.shuffleModule = config.plugin.file;
    this.recovery = config.recovery;
    this.taskManagers = options.taskManagers;
  }

  /**
   * Starts the cluster: the job manager, its REST endpoint (its URL printed), and the task managers,
   * whose registrations are printed as they come; resolves once every one registered.
   *
   * @throws the job manager's and the endpoint's start-up errors (a bad configuration or plugin).
   */
  static async start(
    options: DemoOptions,
    config: DemoConfiguration,
    io: DemoIO,
    failures: JobFailures,
  ): Promise<LocalWordCountCluster> {
    const local = new LocalWordCountCluster(options, config, io, failures);
    await local.startCluster();
    return local;
  }

  private say(text: string): void {
    this.io.human.write(text);
  }

  private warn(message: string): void {
    this.io.stderr.write(`warning: ${message}\n`);
  }

  private async startCluster(): Promise<void> {
    const { configuration } = this.config;
    this.cluster = await LocalCluster.start({
      configuration,
      taskManagers: 0,
      usrlib: [JOB_MODULE_DIR],
      output: (line, stream, process) => this.processLine(line, stream, process),
      replaceLostTaskManagers: this.recovery.restarts,
      onTaskManagerStarted: (process, replacing) => this.taskManagerStarted(process, replacing),
      jobManager: {
        onFatalError: (error) =>
          this.failures.record(1, `the shuffle master failed: ${error.message}`),
        onTaskManagerRegistered: (tm) => {
          const { host, dataPort, resourceId } = tm.location;
          this.say(`${tm.label} ready: data port ${host}:${dataPort}, resource ${resourceId}\n`);
          for (const { reporter, url } of tm.metricEndpoints) {
            this.say(`${tm.label} metrics (${reporter}): ${url}\n`);
          }
        },
        onTaskManagerLost: (tm, cause) => this.taskManagerLost(tm, cause),
        // A job that cannot run says what it waits for, and how long it will.
        onTaskManagerWait: (wait, phase) => this.say(`${describeTaskManagerWait(wait, phase)}\n`),
        // Every failover is printed with its cause: a job that restarts again and again (a full
        // disk) must not loop silently.
        jobStatusListener: (_jobId, status, cause) => {
          if (status !== "RESTARTING") return;
          const why =
            cause === undefined ? "" : `: ${describeThrowable(serializeThrowable(cause))}`;
          this.say(`the job fails over (restart ${++this.failovers})${why}\n`);
        },
        onWarning: (message) => this.warn(message),
      },
    });
    const { jobManager } = this.cluster;
    this.say(headerOf(this.options, this.options.taskManagers, this.shuffle));
    try {
      for (const { reporter, url } of jobManager.deployer.metricGroup.registry.endpoints()) {
        this.say(`job manager metrics (${reporter}): ${url}\n`);
      }
      announceShuffleWorkers(
        jobManager.deployer.master,
        jobManager.configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS),
        (line) => this.say(line),
      );
      this.endpoint = await WebMonitorEndpoint.start(jobManager, {
        onWarning: (message) => this.warn(message),
      });
      this.client = new RestClusterClient({ host: "127.0.0.1", port: this.endpoint.port });
      this.say(`dashboard: ${this.endpoint.url}\n`);
      for (let i = 0; i < this.options.taskManagers; i++) {
        this.cluster.startTaskManager().catch((error: unknown) => {
          // One that exited first is judged by its exit (its code says more); closing ends a
          // start in progress, which is no failure of its own.
          if (isSluiceError(error, ErrorCodes.TIMEOUT) && !this.shuttingDown) {
            this.failures.record(2, error.message);
          }
        });
      }
      await this.failures.phase(
        jobManager
          .waitForTaskManagers(this.options.taskManagers, STARTUP_TIMEOUT_MS)
          .catch((error: unknown) => {
            if (!isSluiceError(error, ErrorCodes.TIMEOUT)) throw error;
            this.failures.record(2, error.message);
            throw new JobFailedError();
          }),
      );
    } catch (error) {
      await this.close();
      throw error;
    }
  }

  rest(): RestClusterClient {
    return this.client;
  }

  async jobSubmitted(jobId: string): Promise<void> {
    const execution = this.cluster.jobManager.jobs.find((job) => job.jobId.toString() === jobId);
    this.execution = execution;
    if (execution === undefined) return;
    const { options } = this;
    const stages = { producers: SOURCE_VERTEX, consumers: COUNT_VERTEX };
    if (options.killTaskManagerAfterMs !== undefined || options.killTaskManagerBetweenStages) {
      this.taskManagerKill = new TaskManagerKill(
        this.cluster,
        {
          afterMs: options.killTaskManagerAfterMs ?? 0,
          ...(options.mode === "batch" ? { stages } : {}),
          checkpointed: this.recovery.mode !== undefined,
          ...(options.output === undefined
            ? {}
            : {
                sink: {
                  directory: options.output,
                  writers: COUNT_VERTEX,
                  subtaskOf: (part) => {
                    const subtask = COMMITTED_PART_FILE.exec(part)?.[1];
                    return subtask === undefined ? undefined : Number(subtask);
                  },
                },
              }),
        },
        {
          onKilled: (killed) => this.say(this.killLine(killed)),
          onSkipped: (status) =>
            this.say(`--kill-task-manager-after: the job is ${status}; nothing killed\n`),
        },
      );
      this.taskManagerKill.start(execution);
    }
    if (options.killShuffleWorkerAfterMs !== undefined) {
      this.shuffleWorkerKill = new ShuffleWorkerKill(
        this.cluster.jobManager.deployer.master,
        options.killShuffleWorkerAfterMs,
        stages,
        {
          onKilled: ({ pid, afterMs, partitions }) =>
            this.say(
              `killing shuffle worker (pid ${pid}) with SIGKILL ${formatDuration(afterMs)} into the job (the counting stage started; it stores ${partitions} partition${partitions === 1 ? "" : "s"}, whose producers re-run)\n`,
            ),
          onSkipped: ({ status, noWorker }) =>
            this.say(
              noWorker
                ? "--kill-shuffle-worker-after: no live shuffle worker started by the demo; nothing killed\n"
                : `--kill-shuffle-worker-after: the job is ${status}; nothing killed\n`,
            ),
        },
      );
      this.shuffleWorkerKill.start(execution);
    }
  }

  waiting(): readonly string[] {
    return this.cluster.jobManager.taskManagerWaits.map((wait) => describeTaskManagerWait(wait));
  }

  async finish(
    jobId: string,
    job: JobDetailsInfo | undefined,
    failed: boolean,
  ): Promise<ClusterEnd> {
    this.taskManagerKill?.stop();
    this.shuffleWorkerKill?.stop();
    const { jobManager } = this.cluster;
    const registered = jobManager.taskManagers;
    const differences: string[] = [];
    let batch: BatchSummary | undefined;
    if (!failed && job !== undefined && this.options.mode === "batch") {
      batch = await this.batchSummary(registered, job, differences);
    }
    this.shuttingDown = true;
    const reports = new Map<RegisteredTaskManager, ShutdownReport>();
    const outcomes = await jobManager.shutDownTaskManagers({
      reason: failed ? `the job ${jobId} failed` : "the job finished",
      failed,
      timeoutMs: failed ? CANCEL_GRACE_MS : SHUTDOWN_TIMEOUT_MS,
    });
    for (const [tm, outcome] of outcomes) {
      if (!(outcome instanceof Error)) reports.set(tm, outcome);
      else if (!failed) {
        this.failures.record(2, `${tm.label} failed to shut down: ${outcome.message}`);
      }
    }
    const processes: ProcessReport[] = [
      { role: "jobmanager", pid: process.pid, peakRssMb: process.resourceUsage().maxRSS / 1024 },
      ...registered.map((tm) => {
        const report = reports.get(tm);
        const lost = this.lost.has(tm);
        if (report === undefined && !lost && !failed) {
          differences.push(`${tm.label} did not report its shutdown`);
        }
        return {
          role: "taskmanager" as const,
          index: tm.index,
          pid: tm.pid,
          ...(lost ? { lost } : {}),
          peakRssMb: (report?.peakRssBytes ?? 0) / 2 ** 20,
          ...(report?.networkBuffers == null ? {} : { bufferPool: report.networkBuffers }),
          unreleasedPartitions: report?.unreleasedPartitions ?? 0,
        };
      }),
    ];
    const taskManagers: ListedTaskManager[] = registered.map((tm) => ({
      id: tm.location.resourceId.toString(),
      index: tm.index,
      pid: tm.pid,
      connected: tm.connected,
    }));
    const killed = this.taskManagerKill?.killed;
    return {
      processes,
      taskManagers,
      killedTaskManager:
        killed === undefined
          ? undefined
          : {
              index: killed.index,
              pid: killed.pid,
              afterMs: killed.afterMs,
              tasks: killed.tasks,
              ...(this.latestAtLoss === undefined
                ? {}
                : { latestCheckpoint: Number(this.latestAtLoss) }),
            },
      batch,
      differences,
    };
  }

  /** The local processes still running, by pid (for the report of a failed run). */
  get processes(): readonly { readonly pid: number; readonly exited: boolean }[] {
    return (this.cluster?.taskManagers ?? []).map((p) => ({ pid: p.pid, exited: p.hasExited }));
  }

  async close(): Promise<void> {
    this.shuttingDown = true;
    this.taskManagerKill?.stop();
    this.shuffleWorkerKill?.stop();
    await this.endpoint?.close();
    await this.cluster?.close();
  }

  /**
   * What every task manager's blocking partitions wrote and deleted (a lost one is left out),
   * the shuffle workers' when they hold the partitions, and when each stage ran.
   */
  private async batchSummary(
    registered: readonly RegisteredTaskManager[],
    job: JobDetailsInfo,
    differences: string[],
  ): Promise<BatchSummary> {
    const connected = registered.filter((tm) => tm.connected && !this.lost.has(tm));
    const reports = await batchShuffleReports(
      this.client,
      connected.map((tm) => tm.location.resourceId.toString()),
    );
    if (reports.some((report) => report === null)) {
      differences.push(
        "a task manager's shuffle plugin registers no Status.Shuffle.Netty.BatchShuffle metrics; batch mode reports them",
      );
    }
    const shuffleWorkers = await shuffleWorkerReports(this.cluster.jobManager.deployer.master);
    const summary: BatchSummary = {
      codec: shuffleWorkers === undefined ? (this.config.codec ?? "NONE") : "NONE",
      taskManagers: reports.filter((report) => report !== null),
      stages: stagesOf(job),
      ...(shuffleWorkers === undefined ? {} : { shuffleWorkers }),
    };
    differences.push(...batchDifferences(summary, COUNT_VERTEX));
    return summary;
  }

  /** A task manager process's line: its registration's goes, its warnings and errors stay. */
  private processLine(line: string, stream: "stdout" | "stderr", process: SluiceProcess): void {
    if (stream === "stdout") return;
    const prefixed = /^(warning|error): (.*)$/s.exec(line);
    this.io.stderr.write(
      prefixed === null
        ? `task manager (pid ${process.pid}): ${line}\n`
        : `${prefixed[1]}: task manager (pid ${process.pid}): ${prefixed[2]}\n`,
    );
  }

  private taskManagerStarted(
    process: LocalTaskManagerProcess,
    replacing: RegisteredTaskManager | undefined,
  ): void {
    void process.exited.then((exit) => this.taskManagerExited(process, exit));
    if (replacing === undefined || !this.survived.has(replacing)) return;
    if (!this.ranTasks(replacing)) return;
    const latest = this.execution?.checkpointCoordinator?.latestCompletedCheckpoint;
    const from =
      this.options.mode === "batch"
        ? "the regions that lost tasks or partitions"
        : latest === undefined
          ? "from the start"
          : `from checkpoint ${latest.checkpointId}`;
    this.say(
      `${replacing.label} was lost: the job restarts ${from}; started task manager pid ${process.pid} to replace it\n`,
    );
  }

  private ranTasks(tm: RegisteredTaskManager): boolean {
    return this.execution?.executionVertices.some((v) => v.gateway === tm) ?? false;
  }

  /** A registered task manager was lost with `cause`: survived, or a failure of the run. */
  private taskManagerLost(tm: RegisteredTaskManager, cause: Error): void {
    this.lost.add(tm);
    // One that runs no task of the job (it registered and dropped before the job started) only
    // leaves the pool: the job waits for, or runs on, the others.
    if (!this.ranTasks(tm)) {
      this.warn(`${cause.message}; it ran no task of the job and is dropped from the pool`);
      this.survived.add(tm);
      return;
    }
    // A job that restarts without it (from its latest checkpoint) has not failed.
    if (this.recovery.restarts) {
      this.survived.add(tm);
      this.latestAtLoss ??=
        this.execution?.checkpointCoordinator?.latestCompletedCheckpoint?.checkpointId;
      return;
    }
    this.failures.record(1, cause.message);
  }

  /**
   * A task manager process exited: expected when killed on purpose, shut down, or lost while the
   * job went on without it; otherwise a failure, a signal before its consequences.
   */
  private taskManagerExited(process: LocalTaskManagerProcess, exit: ProcessExit): void {
    if (process.killedWith !== undefined) return;
    const registered =
      process.registered ??
      this.cluster.jobManager.taskManagers.find((tm) => tm.pid === process.pid);
    const label = registered?.label ?? `task manager (pid ${process.pid})`;
    if (exit.code === null && exit.signal === null) {
      this.failures.record(0, `${label} could not be started`);
      return;
    }
    // One the job went on without was judged when it was lost: its exit, say on waking from a
    // pause, decides nothing more.
    if (registered !== undefined && this.survived.has(registered)) return;
    // A signal nobody here sent is the root cause even when its exit is seen only while the job
    // shuts down: the lost control connection can be reported first and start the shutdown.
    if (exit.signal !== null) {
      this.failures.record(0, `${label} was killed by signal ${exit.signal}`);
    } else if (this.shuttingDown) {
      if (exit.code !== 0) {
        this.failures.record(2, `${label} exited with code ${exit.code} while shutting down`);
      }
    } else {
      // A task manager exits 2 for a bad configuration or plugin: so does the demo.
      this.failures.record(
        2,
        `${label} exited unexpectedly with code ${exit.code}`,
        exit.code === 2 ? 2 : 1,
      );
    }
  }

  private killLine(killed: KilledTaskManager): string {
    const latest = killed.latestCheckpoint;
    const moment =
      killed.notPreCommitted === undefined
        ? ""
        : `; ${COUNT_VERTEX} (${killed.notPreCommitted + 1}/${this.options.parallelism}) has not pre-committed the checkpoint another counter pre-committed`;
    const state = !this.recovery.restarts
      ? "the job does not restart (no checkpoints, restart-strategy.type none): it fails"
      : this.options.mode === "batch"
        ? `the counting stage started; it ran ${killed.tasks.join(", ")}`
        : latest === undefined
          ? "no checkpoint completed yet"
          : `latest completed checkpoint ${latest}${moment}`;
    return `killing ${killed.label} with SIGKILL ${formatDuration(killed.afterMs)} into the job (${state})\n`;
  }
}
