/**
 * One run of the demo: a cluster (started here, or a session cluster), the word count's job
 * module submitted to it, the job followed through the REST API of the job manager that leads
 * (the progress line), then its summary, its counts verified, and the exit code.
 */
import { setTimeout as delay } from "node:timers/promises";
import {
  exitCodeOf,
  formatError,
  type JobDetailsInfo,
  type JobExecutionResultInfo,
  type JobExecutionResultResponseBody,
  type JobSubmitResponseBody,
  type RestClusterClient,
} from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { JobGraphCodec } from "@sluice/runtime/plugin";
import type { DemoOptions } from "./cli.js";
import {
  type Failure,
  failureLines,
  JobFailedError,
  JobFailures,
  settlesWithin,
  untilAborted,
} from "./job-failures.js";
import { buildJobReport } from "./job-report.js";
import { type DemoIO, LocalWordCountCluster } from "./local-word-count-cluster.js";
import { createProgressView, type ProgressView, taskProgressOfDetails } from "./progress.js";
import { SessionWordCountCluster } from "./session-word-count-cluster.js";
import { readCommittedOutput } from "./sink-options.js";
import { StandbyWordCountCluster } from "./standby-word-count-cluster.js";
import { formatSummary, type JobReport, summaryJson } from "./summary.js";
import type { TaskProgress } from "./task-progress.js";
import {
  type ClusterEnd,
  JOB_MODULE_REFERENCE,
  loadDemoConfiguration,
  type WordCountCluster,
} from "./word-count-cluster.js";
import wordCount, { COUNT_VERTEX, type CountResult } from "./word-count-job.js";
import { wordCountArgs } from "./word-count-options.js";

/**
 * How often the job's state is read: the run ends (and reports the job's duration) at most this
 * long after the job did.
 */
const POLL_MS = 100;
/** How often the progress line is redrawn: per-second rates over shorter spans would jitter. */
const PROGRESS_MS = 500;
/** How long the job manager may not answer (a failover is shorter) before the run gives up. */
const UNREACHABLE_MS = 120_000;
/** After a failure: how long the job gets to end once canceled, and the cluster to report. */
const CANCEL_GRACE_MS = 5_000;

const FINAL_STATES = new Set(["FINISHED", "FAILED", "CANCELED"]);

export type { DemoIO } from "./local-word-count-cluster.js";

/** Runs the word count as `options` say; resolves with the exit code. */
export async function runWordCount(options: DemoOptions, io: DemoIO): Promise<number> {
  return new DemoRun(options, io).run();
}

class DemoRun {
  private readonly failures = new JobFailures();
  private cluster: WordCountCluster | undefined;
  private jobId: string | undefined;
  private interruptedBy: NodeJS.Signals | undefined;
  private readonly onSignal = (signal: NodeJS.Signals) => this.interrupted(signal);

  constructor(
    private readonly options: DemoOptions,
    private readonly io: DemoIO,
  ) {}

  private say(text: string): void {
    this.io.human.write(text);
  }

  async run(): Promise<number> {
    process.on("SIGINT", this.onSignal);
    process.on("SIGTERM", this.onSignal);
    try {
      try {
        this.cluster = await this.startCluster();
      } catch (error) {
        if (error instanceof JobFailedError) return await this.reportFailure();
        this.io.stderr.write(formatError(error));
        return exitCodeOf(error);
      }
      try {
        return await this.runJob(this.cluster);
      } catch (error) {
        if (!(error instanceof JobFailedError)) {
          this.failures.record(
            0,
            formatError(error).replace(/^error: |\n$/g, ""),
            exitCodeOf(error),
          );
        }
        return await this.reportFailure();
      }
    } finally {
      process.off("SIGINT", this.onSignal);
      process.off("SIGTERM", this.onSignal);
      await this.cluster?.close();
    }
  }

  private async startCluster(): Promise<WordCountCluster> {
    const { options, io } = this;
    if (options.cluster === "session") return SessionWordCountCluster.connect(options, io);
    const config = await loadDemoConfiguration(options, (text) => this.say(text));
    return options.cluster === "local"
      ? LocalWordCountCluster.start(options, config, io, this.failures)
      : StandbyWordCountCluster.start(options, config, io);
  }

  private async runJob(cluster: WordCountCluster): Promise<number> {
    const { options, io, failures } = this;
    // The job module builds the graph from its arguments, as `sluice run` has it do.
    const graph = await wordCount.createJobGraph({
      args: wordCountArgs(options),
      configuration: new Configuration(),
    });
    graph.setUserCodeModule(JOB_MODULE_REFERENCE);
    const { jobid } = await failures.phase(
      this.client().request<JobSubmitResponseBody>("POST", "/jobs", {
        jobGraph: JobGraphCodec.toJSON(graph) as never,
      }),
    );
    this.jobId = jobid;
    await cluster.jobSubmitted(jobid);
    const startedAt = performance.now();
    const view = createProgressView(io.human);
    const job = await this.follow(jobid, view, startedAt);
    const durationMs = performance.now() - startedAt;
    if (job.state !== "FINISHED") {
      view.stop();
      failures.record(3, await this.failureMessage(jobid, job));
      throw new JobFailedError();
    }
    const result = await this.executionResult(jobid);
    // The final line has the tasks' own final counters.
    view.update(
      {
        elapsedMs: durationMs,
        totalRecords: options.records,
        tasks: finalProgressOf(result),
      },
      true,
    );
    view.stop();
    const end = await cluster.finish(jobid, job, false);
    const report = buildJobReport({
      options,
      shuffle: cluster.shuffle,
      shuffleModule: cluster.shuffleModule,
      result,
      details: job,
      taskManagers: end.taskManagers,
      processes: end.processes,
      checkpointing: cluster.recovery.mode,
      durationMs,
      killedTaskManager: end.killedTaskManager,
      batch: end.batch,
      committed: await this.committedOutput(result),
      differences: end.differences,
    });
    this.printSummary(report, end);
    return report.verified ? 0 : 1;
  }

  private printSummary(report: JobReport, end: ClusterEnd): void {
    this.io.human.write(formatSummary(report));
    for (const line of end.epilogue ?? []) this.say(`${line}\n`);
    if (this.options.json) {
      this.io.stdout.write(`${JSON.stringify({ ...summaryJson(report), ...end.json })}\n`);
    }
  }

  /** The client of the job manager that leads now. */
  private client(): RestClusterClient {
    const client = this.cluster?.rest();
    if (client === undefined) throw new Error("no job manager leads the cluster now");
    return client;
  }

  /**
   * Follows the job through the leader's REST endpoint until it ended, drawing the progress line;
   * rides out a failover (the endpoint gone, or not knowing the job yet), and ends at once when
   * the run failed meanwhile.
   */
  private async follow(
    jobId: string,
    view: ProgressView,
    startedAt: number,
  ): Promise<JobDetailsInfo> {
    const latest = new Map<string, TaskProgress>();
    let drawnAt = Number.NEGATIVE_INFINITY;
    let answeredAt = Date.now();
    let lastError: unknown;
    for (;;) {
      let job: JobDetailsInfo | undefined;
      try {
        job = await this.failures.phase(this.client().get<JobDetailsInfo>(`/jobs/${jobId}`));
      } catch (error) {
        if (error instanceof JobFailedError) throw error;
        lastError = error;
      }
      if (job !== undefined) {
        answeredAt = Date.now();
        // A later attempt of a subtask replaces an earlier one; one that restarts keeps its last.
        for (const task of taskProgressOfDetails(job)) {
          latest.set(`${task.kind} ${task.subtaskIndex}`, task);
        }
        if (FINAL_STATES.has(job.state)) return job;
        const elapsedMs = performance.now() - startedAt;
        if (elapsedMs - drawnAt >= PROGRESS_MS) {
          drawnAt = elapsedMs;
          view.update({
            elapsedMs,
            totalRecords: this.options.records,
            tasks: [...latest.values()],
            waiting: this.cluster?.waiting() ?? [],
          });
        }
      } else if (Date.now() - answeredAt > UNREACHABLE_MS) {
        this.failures.record(
          1,
          `the job manager did not answer for ${UNREACHABLE_MS / 1000} s: ${(lastError as Error)?.message ?? lastError}`,
        );
        throw new JobFailedError();
      }
      await untilAborted(delay(POLL_MS), this.failures.signal);
    }
  }

  /** `GET /jobs/:jobid/execution-result`, once the job ended (the leader has it by then). */
  private async executionResult(jobId: string): Promise<JobExecutionResultInfo> {
    for (;;) {
      const body = await this.client().get<JobExecutionResultResponseBody>(
        `/jobs/${jobId}/execution-result`,
      );
      if ("job-execution-result" in body) return body["job-execution-result"];
      await untilAborted(delay(50), this.failures.signal);
    }
  }

  /** With `--sink files`: what the committed part files hold. */
  private async committedOutput(result: JobExecutionResultInfo) {
    const { output, parallelism } = this.options;
    if (output === undefined) return undefined;
    const committed = await readCommittedOutput(output, parallelism);
    const counters = (result["accumulator-results"][COUNT_VERTEX] ??
      []) as unknown as (Partial<CountResult> | null)[];
    return {
      output: committed,
      sink: {
        directory: output,
        committedFiles: committed.committedFiles,
        committedBytes: committed.committedBytes,
        abortedTransactions: counters.reduce((sum, c) => sum + (c?.abortedTransactions ?? 0), 0),
      },
    };
  }

  /**
   * Why a job that did not finish ended: the failed task and the task manager it ran on, then the
   * root cause, as the job manager's REST API tells it.
   */
  private async failureMessage(jobId: string, job: JobDetailsInfo): Promise<string> {
    try {
      const result = await this.executionResult(jobId);
      const cause = result["failure-cause"]?.description ?? `the job ended ${job.state}`;
      const task = result["failed-task"];
      if (task === null) return cause;
      const where = result["failed-task-location"]?.["resource-id"];
      const listed = await this.client()
        .get<{ taskmanagers: { id: string; index: number; pid: number }[] }>("/taskmanagers")
        .then((body) => body.taskmanagers.find((tm) => tm.id === where))
        .catch(() => undefined);
      const on =
        where === undefined
          ? ""
          : ` on ${listed === undefined ? `TaskExecutor ${where}` : `task manager ${listed.index} (pid ${listed.pid})`}`;
      return `task ${task}${on} failed: ${cause}`;
    } catch {
      return job["root-cause"] ?? `the job ended ${job.state}`;
    }
  }

  /**
   * Ends the job (its tasks are canceled), stops the cluster's task managers, and reports the
   * failure: the root cause first, then the others, then what became of the processes.
   */
  private async reportFailure(): Promise<number> {
    const cluster = this.cluster;
    const jobId = this.jobId;
    const [failure] = this.failures.byRank() as [Failure];
    let end: ClusterEnd | undefined;
    if (cluster !== undefined) {
      if (jobId !== undefined) {
        // No-op when the job ended already; otherwise (interrupted, a process lost) it stops.
        await settlesWithin(
          cluster.rest()?.request("PATCH", `/jobs/${jobId}?mode=cancel`) ?? Promise.resolve(),
          CANCEL_GRACE_MS,
        );
      }
      const finished = cluster.finish(jobId ?? "", undefined, true);
      if (await settlesWithin(finished, CANCEL_GRACE_MS * 2))
        end = await finished.catch(() => undefined);
      await cluster.close();
    }
    // Failures recorded while stopping (a child's exit code) belong to the report too.
    const failures = this.failures.byRank() as [Failure, ...Failure[]];
    const local = cluster instanceof LocalWordCountCluster ? cluster.processes : undefined;
    const taskManagers = end?.taskManagers ?? [];
    const lines = failureLines(
      failures,
      local !== undefined
        ? { local }
        : {
            registered: taskManagers.length,
            stopped: taskManagers.filter((tm) => tm.connected).length,
            lost: taskManagers.filter((tm) => !tm.connected).length,
          },
    );
    this.io.stderr.write(`${lines.join("\n")}\n`);
    if (this.options.json) {
      this.io.stdout.write(
        `${JSON.stringify({
          verified: false,
          error: failure.message,
          shuffle: cluster?.shuffle,
          processes: (end?.processes ?? []).map((p) => ({
            role: p.role,
            ...(p.index === undefined ? {} : { index: p.index }),
            pid: p.pid,
            ...(p.peakRssMb === undefined ? {} : { peakRssMb: Math.round(p.peakRssMb * 10) / 10 }),
          })),
          ...end?.json,
        })}\n`,
      );
    }
    return failures[0].exitCode;
  }

  private interrupted(signal: NodeJS.Signals): void {
    if (this.interruptedBy !== undefined) {
      // A second signal while tearing down: stop waiting (the cluster kills its processes as this
      // process exits).
      process.exit(signal === "SIGINT" ? 130 : 143);
    }
    this.interruptedBy = signal;
    this.failures.record(-1, `interrupted by ${signal}`, signal === "SIGINT" ? 130 : 143);
  }
}

/** Every task's final counters, as it returned them with its result. */
function finalProgressOf(result: JobExecutionResultInfo): TaskProgress[] {
  return Object.values(result["accumulator-results"]).flatMap((results) =>
    results.flatMap((value) => {
      const progress = (value as { progress?: TaskProgress } | null)?.progress;
      return progress === undefined ? [] : [progress];
    }),
  );
}
