import { setTimeout as delay } from "node:timers/promises";
import {
  CancelledError,
  deferred,
  ErrorCodes,
  IllegalStateError,
  isSluiceError,
  type JobID,
} from "@sluice/core";
import {
  type DeployOptions,
  isGloballyTerminal,
  type JobDeployer,
  type JobExecution,
  type JobGraph,
  type JobResult,
  type JobStatus,
  type Placement,
} from "@sluice/runtime";
import { type CompletedCheckpoint, leadershipEpochOf } from "@sluice/runtime/plugin";
import { FencingTokenError, type JobResultEntry, type JsonObject } from "@sluice/runtime-api";
import type { JobPersistence } from "./job-persistence.js";
import { jobResultOfEntry } from "./stored-job-result.js";
import type { SubmittedJob } from "./submitted-job.js";

/**
 * A job of the cluster, as a job manager knows it (Flink's `JobClient`): one it runs, or one
 * that ended for good before, under this job manager or another.
 */
export interface JobClient {
  /** The job. */
  readonly jobId: JobID;
  /**
   * The job's execution on this job manager; `undefined` when the job had ended for good before
   * (its result is stored) and was not run again.
   */
  readonly execution: JobExecution | undefined;
  /**
   * How the job ended: once its execution ended here — and, when it ended for good, once its
   * result is stored (and its high-availability data cleaned up) — or at once the stored result
   * of a job that ended before. SUSPENDED when this job manager lost its leadership (or closed
   * under high availability) first: the job goes on under the next leader, which an application
   * follows with `getJob` there.
   */
  readonly result: Promise<JobResult>;
}

/**
 * A job this job manager took over at its election (or, later, at its submission) and has not
 * deployed yet: it reads the job's latest checkpoint and waits for the task managers it ran on.
 * Flink's Dispatcher lists such a job as INITIALIZING until its JobMaster runs, and so does the
 * REST endpoint.
 */
export interface InitializingJob {
  /** The job. */
  readonly jobId: JobID;
  /** Its graph, as the job graph store keeps it. */
  readonly graph: JobGraph;
  /** When this job manager began to take it over (ms since the epoch). */
  readonly initializedAt: number;
  /** Whether {@link InitializingJob.cancel} was called (Flink shows the job CANCELLING then). */
  readonly cancelRequested: boolean;
  /**
   * Resolves with the job's execution once it is deployed; with `undefined` when it ended
   * first (see {@link InitializingJob.result}).
   */
  readonly started: Promise<JobExecution | undefined>;
  /**
   * How the job ended. Before it was deployed: CANCELED once canceled (the result is stored, as
   * for any canceled job); SUSPENDED when the job manager lost its leadership or closed; FAILED
   * with the cause when it could not be taken over (its latest checkpoint could not be read, no
   * connected task manager can run its code, its deployment failed). A failed takeover stores no
   * result and deletes nothing (Flink fails its dispatcher over to recover the job once more): the
   * job stays in the stores, and the next leader, or a submission of the same job here, takes it
   * over again.
   */
  readonly result: Promise<JobResult>;
  /**
   * Cancels the job (Flink cancels a job being initialized): it is not deployed, and ends
   * CANCELED with a `CancelledError` of `reason`. When its deployment is under way, the
   * execution is canceled as soon as it exists. Idempotent.
   */
  cancel(reason: string): void;
}

/** What a {@link Dispatcher} works with: its job manager's parts. */
export interface DispatcherContext {
  /** The runtime's deployer: every job runs through it. */
  readonly deployer: JobDeployer;
  /** The high-availability stores of the jobs. */
  readonly persistence: JobPersistence;
  /**
   * Whether the job managers elect a leader (high availability other than `none`): tasks then
   * get the leadership's epoch, and a closing job manager suspends its jobs.
   */
  readonly elected: boolean;
  /** The fencing token of this job manager's leadership now, or `undefined`. */
  fencingToken(): string | undefined;
  /**
   * The default placement of `graph` (subtask `i` on the `i mod n`-th connected task manager, lost
   * ones replaced) and `n`; `undefined` when no task manager is connected.
   *
   * @throws TaskDeploymentError when a connected task manager cannot run the graph's code.
   */
  defaultPlacement(
    graph: JobGraph,
  ): Promise<{ readonly placement: Placement; readonly taskManagers: number } | undefined>;
  /** Told of every job this job manager deploys, once it started. */
  onDeployed(execution: JobExecution): void;
  /**
   * Resolves once `count` task managers are connected, or `slot.request.timeout` passed and at
   * least one is; false when `leading()` turned false, `signal` aborted or the job manager
   * closed meanwhile.
   */
  awaitTaskManagers(count: number, leading: () => boolean, signal: AbortSignal): Promise<boolean>;
  /** The number of task managers connected now. */
  connectedTaskManagers(): number;
  /** Told of every job this job manager took over at its election, once it is deployed. */
  readonly onJobRecovered?: (execution: JobExecution) => void;
  /** Told of every job this job manager begins to take over, before it is deployed. */
  onJobInitializing(job: InitializingJob): void;
  /** Told of every status change of every job this job manager runs. */
  readonly jobStatusListener?: (jobId: JobID, status: JobStatus, cause: Error | undefined) => void;
  /** Reports what does not stop the job manager (a failover without a listener, a cleanup). */
  warn(message: string): void;
}

/** One job this job manager runs under one leadership. */
interface DispatchedJob {
  readonly jobId: JobID;
  /** The leadership it runs under. */
  readonly token: string;
  execution: JobExecution | undefined;
  /** Resolves once it is deployed; `undefined` when it was suspended or failed before. */
  started: Promise<JobExecution | undefined>;
  readonly result: Promise<JobResult>;
  readonly ended: (result: JobResult) => void;
  /** While it is taken over and not deployed yet: what the REST endpoint shows INITIALIZING. */
  initializing: InitializingJob | undefined;
  /** Why it was canceled before it was deployed; `undefined` when it was not. */
  cancelReason: string | undefined;
  /**
   * Aborted when the job is canceled or its leadership ends: a takeover stops waiting for task
   * managers then.
   */
  readonly stop: AbortController;
}

/** How long a recovery waits before it asks the stores again after they failed. */
const RECOVERY_RETRY_MS = 1_000;

/**
 * The job side's bookkeeping of jobs (Flink's `Dispatcher`): it submits jobs, keeps each in the
 * job graph store, recovers the stored jobs when its job manager is elected, stores a job's result
 * and cleans up once it ended for good, and suspends its jobs when the leadership is lost.
 *
 * A job is known by its id: submitting a job that runs here gives its execution, one that ended
 * for good its stored result, so an application that runs its `main` again on every job manager
 * that becomes leader (with a fixed job id) never runs a job twice.
 */
export class Dispatcher {
  private readonly jobs = new Map<string, DispatchedJob>();
  /** Resolves once the current leadership's recovery registered every job it recovers. */
  private listing: Promise<void> = Promise.resolve();
  private listingToken: string | undefined;
  /** Whether the recovery of leadership {@link listingToken} registered every job it recovers. */
  private listed = false;
  private readonly cleanups = new Set<Promise<void>>();
  /** The jobs whose cleanup (of a dirty result found at an election) runs now. */
  private readonly cleaning = new Set<string>();
  private closing = false;

  constructor(private readonly context: DispatcherContext) {}

  /** The executions this job manager runs now (not ended; a result may still be being stored). */
  get executions(): readonly JobExecution[] {
    return [...this.jobs.values()].flatMap((job) => {
      const { execution } = job;
      if (execution === undefined) return [];
      const { status } = execution;
      return isGloballyTerminal(status) || status === "SUSPENDED" ? [] : [execution];
    });
  }

  /** The jobs taken over and not deployed yet (INITIALIZING), in the order they were taken over. */
  get initializing(): readonly InitializingJob[] {
    return [...this.jobs.values()].flatMap((job) =>
      job.initializing === undefined || job.execution !== undefined ? [] : [job.initializing],
    );
  }

  /**
   * Whether this job manager leads and is still listing the jobs it takes over at its election:
   * until it is done, a job it does not know yet may be one it takes over.
   */
  get recovering(): boolean {
    return this.listingToken !== undefined && !this.listed;
  }

  /**
   * This job manager leads now (`token`): the jobs the stores hold and no result ended are
   * recovered, each from its latest stored checkpoint, and the cleanups a previous leader left
   * (dirty results) are finished.
   */
  grantLeadership(token: string): void {
    this.listingToken = token;
    this.listed = false;
    this.listing = this.recoverJobs(token).finally(() => {
      if (this.listingToken === token) this.listed = true;
    });
  }

  /**
   * This job manager lost its leadership: every job it runs is suspended (it deletes nothing and
   * stores no result; the next leader takes it over), and every takeover stops.
   */
  revokeLeadership(cause: Error): void {
    this.listingToken = undefined;
    for (const job of this.jobs.values()) {
      job.stop.abort(cause);
      job.execution?.suspend(cause);
    }
    this.jobs.clear();
  }

  /**
   * Runs `graph` unless this job manager runs it already (submitted before, or taken over) or it
   * ended for good before: see {@link JobClient}.
   *
   * @throws FencingTokenError when this job manager does not lead; IllegalStateError when no
   *   placement is given and no task manager is connected; the store's and the deployer's errors.
   */
  async submitJob(
    graph: JobGraph,
    placement: Placement | undefined,
    options: DeployOptions,
  ): Promise<JobClient> {
    const token = this.leadership(`submitting job ${graph.name} (${graph.jobId})`);
    await this.listedFor(token);
    const id = graph.jobId.toString();
    const known = this.jobs.get(id);
    if (known !== undefined) return this.clientOf(known, await known.started);
    const stored = await this.context.persistence.storedResult(id);
    if (stored !== undefined) return endedClient(stored);
    // Stored, but not recovered here (the stores failed at the election): taken over now.
    const submitted = await this.context.persistence.recoverJob(id);
    if (this.leadership(`submitting job ${graph.name} (${graph.jobId})`) !== token) {
      return this.submitJob(graph, placement, options);
    }
    if (submitted !== undefined && !this.jobs.has(id)) {
      const job = this.takeOver(submitted, token);
      const execution = await job.started;
      // The submitter learns why the takeover failed, as it would of a failed submission.
      const failure = execution === undefined ? await takeoverFailure(job) : undefined;
      if (failure !== undefined) throw failure;
      return this.clientOf(job, execution);
    }
    const again = this.jobs.get(id);
    if (again !== undefined) return this.clientOf(again, await again.started);
    const target = placement ?? (await this.context.defaultPlacement(graph))?.placement;
    if (target === undefined) {
      throw new IllegalStateError(
        `cannot deploy job ${graph.name}: no task manager is registered with the job manager`,
      );
    }
    // The check above awaited: another submission of the job may have started it meanwhile.
    const raced = this.jobs.get(id);
    if (raced !== undefined) return this.clientOf(raced, await raced.started);
    if (this.leadership(`submitting job ${graph.name} (${graph.jobId})`) !== token) {
      return this.submitJob(graph, placement, options);
    }
    const job = this.register(graph.jobId, token);
    job.started = this.launch(job, submittedJobOf(graph, options, this.context), target, options);
    return this.clientOf(job, await job.started);
  }

  /**
   * The job `jobId` by its id: the one this job manager runs (waiting for the recovery of the
   * current leadership first), else the stored result of one that ended for good, else
   * `undefined`.
   */
  async getJob(jobId: JobID | string): Promise<JobClient | undefined> {
    const id = jobId.toString();
    const token = this.context.fencingToken();
    if (token !== undefined) await this.listedFor(token);
    const job = this.jobs.get(id);
    if (job !== undefined) return this.clientOf(job, await job.started);
    const stored = await this.context.persistence.storedResult(id);
    return stored === undefined ? undefined : endedClient(stored);
  }

  /**
   * The job manager closes: under high availability every job is suspended (the next leader
   * takes it over, from the checkpoints the store names); without it, the deployer's close
   * cancels them. Resolves once {@link settled} may be awaited.
   */
  close(): void {
    this.closing = true;
    this.listingToken = undefined;
    if (!this.context.elected) return;
    const cause = new IllegalStateError(
      "the job manager is closing: the job goes on under the next leader",
    );
    for (const job of this.jobs.values()) {
      job.stop.abort(cause);
      job.execution?.suspend(cause);
    }
  }

  /** Resolves once every job ended and every result was stored and cleaned up. */
  async settled(): Promise<void> {
    await Promise.all([...this.jobs.values()].map((job) => job.result));
    while (this.cleanups.size > 0) await Promise.all([...this.cleanups]);
  }

  // ---------------------------------------------------------------------------- internals

  private leadership(what: string): string {
    const token = this.context.fencingToken();
    if (token === undefined || this.closing) {
      throw new FencingTokenError(`${what} was refused: this job manager is not the leader`);
    }
    return token;
  }

  /** Waits until the recovery of leadership `token` registered its jobs. */
  private async listedFor(token: string): Promise<void> {
    if (this.listingToken === token) await this.listing;
  }

  private register(jobId: JobID, token: string): DispatchedJob {
    const ending = deferred<JobResult>();
    const job: DispatchedJob = {
      jobId,
      token,
      execution: undefined,
      started: Promise.resolve(undefined),
      result: ending.promise,
      ended: (result) => {
        if (this.jobs.get(jobId.toString()) === job) this.jobs.delete(jobId.toString());
        ending.resolve(result);
      },
      initializing: undefined,
      cancelReason: undefined,
      stop: new AbortController(),
    };
    this.jobs.set(jobId.toString(), job);
    return job;
  }

  private clientOf(job: DispatchedJob, execution: JobExecution | undefined): JobClient {
    return { jobId: job.jobId, execution, result: job.result };
  }

  /**
   * Stores `submitted` (a new job) and deploys it; a new job whose start fails is forgotten again
   * and its client gets the error. A job taken over (`recovered`) is not stored again, and its
   * failure is its takeover's to handle.
   */
  private async launch(
    job: DispatchedJob,
    submitted: SubmittedJob,
    placement: Placement,
    options: DeployOptions,
    recovered?: { readonly restoreFrom: CompletedCheckpoint | undefined },
  ): Promise<JobExecution | undefined> {
    const { context } = this;
    const { graph } = submitted;
    try {
      if (recovered === undefined) await context.persistence.storeJob(submitted);
      if (job.cancelReason !== undefined) return await this.endCanceled(job, submitted);
      if (context.fencingToken() !== job.token) {
        job.ended(
          suspendedResult(
            graph.jobId,
            "the job manager lost its leadership before the job was deployed",
          ),
        );
        return undefined;
      }
      const restoreFrom = recovered === undefined ? options.restoreFrom : recovered.restoreFrom;
      const jobId = graph.jobId.toString();
      const { statusListener, ...rest } = options;
      const execution = await context.deployer.deploy(graph, placement, {
        ...rest,
        ...(restoreFrom === undefined ? {} : { restoreFrom }),
        statusListener: this.statusListenerOf(graph, statusListener),
        ...(context.elected ? { leadershipEpoch: leadershipEpochOf(job.token) } : {}),
        storeCompletedCheckpoint: context.persistence.checkpointStorer(submitted),
        checkpointIdCounter: context.persistence.checkpointIdCounter(jobId),
        // Removed by the cleanup once the job's result is stored, never before.
        discardRetainedCheckpointsOnShutdown: false,
      });
      job.execution = execution;
      void execution.terminated.then((result) => this.ended(job, submitted, result));
      context.onDeployed(execution);
      if (context.fencingToken() !== job.token || this.jobs.get(jobId) !== job) {
        execution.suspend(new FencingTokenError("the job manager lost its leadership"));
      } else if (job.cancelReason !== undefined) {
        // Canceled while its deployment was under way: as Flink, once the job runs.
        execution.cancel(job.cancelReason);
      }
      return execution;
    } catch (error) {
      if (recovered === undefined) {
        if (this.jobs.get(graph.jobId.toString()) === job) {
          this.jobs.delete(graph.jobId.toString());
        }
        job.ended(
          suspendedResult(graph.jobId, `the job could not be started: ${(error as Error).message}`),
        );
      }
      throw error;
    }
  }

  /**
   * The job ended: when for good and this job manager still leads as it did when it ran the
   * job, its result is stored and its data cleaned up before its client learns of the end.
   */
  private async ended(
    job: DispatchedJob,
    submitted: SubmittedJob,
    result: JobResult,
  ): Promise<void> {
    const { status } = result;
    if (isGloballyTerminal(status) && this.context.fencingToken() === job.token) {
      const recording = this.context.persistence
        .recordResult(submitted.graph, { ...result, status }, submitted)
        .catch((error: unknown) => {
          this.context.warn(
            `the result of job ${submitted.graph.jobId} (${status}) is not stored: ${(error as Error).message}`,
          );
        });
      this.cleanups.add(recording);
      await recording;
      this.cleanups.delete(recording);
    }
    job.ended(result);
  }

  /** Lists the stored jobs of leadership `token` and recovers each that has no result. */
  private async recoverJobs(token: string): Promise<void> {
    const { persistence } = this.context;
    for (;;) {
      if (this.context.fencingToken() !== token || this.closing) return;
      try {
        for (const entry of await persistence.dirtyResults()) this.finishCleanup(entry, token);
        for (const id of await persistence.jobIds()) {
          if (this.context.fencingToken() !== token || this.jobs.has(id)) continue;
          if ((await persistence.storedResult(id)) !== undefined) continue;
          let submitted: SubmittedJob | undefined;
          try {
            submitted = await persistence.recoverJob(id);
          } catch (error) {
            // etcd out of reach: the whole listing is asked again. A damaged record, or one
            // refused (a pointer outside the storage folder), stays so: that job is left alone,
            // never run from the start, and the others are taken over.
            if (isSluiceError(error, ErrorCodes.HA_UNAVAILABLE)) throw error;
            this.context.warn(`job ${id} cannot be taken over: ${(error as Error).message}`);
            continue;
          }
          if (submitted === undefined || this.jobs.has(id)) continue;
          this.takeOver(submitted, token);
        }
        return;
      } catch (error) {
        this.context.warn(
          `the stored jobs cannot be read, asking again in ${RECOVERY_RETRY_MS} ms: ${(error as Error).message}`,
        );
        await new Promise((resolve) => setTimeout(resolve, RECOVERY_RETRY_MS));
      }
    }
  }

  /**
   * Registers `submitted` as taken over under leadership `token` (an {@link InitializingJob},
   * told to the context at once) and recovers it. Its `started` never rejects: a takeover that
   * fails ends the job (see {@link InitializingJob.result}).
   */
  private takeOver(submitted: SubmittedJob, token: string): DispatchedJob {
    const job = this.register(submitted.graph.jobId, token);
    const initializing: InitializingJob = {
      jobId: job.jobId,
      graph: submitted.graph,
      initializedAt: Date.now(),
      get cancelRequested() {
        return job.cancelReason !== undefined;
      },
      get started() {
        return job.started;
      },
      result: job.result,
      cancel: (reason) => {
        if (job.execution !== undefined) {
          job.execution.cancel(reason);
          return;
        }
        if (job.cancelReason !== undefined) return;
        job.cancelReason = reason;
        job.stop.abort(new CancelledError(reason));
      },
    };
    job.initializing = initializing;
    job.started = this.recover(job, submitted)
      .catch((error: unknown) => this.takeoverFailed(job, submitted, error as Error))
      .finally(() => {
        job.initializing = undefined;
      });
    this.context.onJobInitializing(initializing);
    return job;
  }

  /**
   * Takes `submitted` over: restores its latest stored checkpoint onto the registered task
   * managers, once as many as it ran on are there (see `DispatcherContext.awaitTaskManagers`).
   * A job canceled meanwhile is not deployed.
   */
  private async recover(
    job: DispatchedJob,
    submitted: SubmittedJob,
  ): Promise<JobExecution | undefined> {
    const { context } = this;
    const leading = () =>
      context.fencingToken() === job.token && !this.closing && job.cancelReason === undefined;
    let restoreFrom: CompletedCheckpoint | undefined;
    for (;;) {
      try {
        restoreFrom = await context.persistence.latestCheckpoint(submitted);
        break;
      } catch (error) {
        // etcd out of reach is asked again, as the listing of the jobs is; anything else fails
        // the takeover.
        if (!isSluiceError(error, ErrorCodes.HA_UNAVAILABLE) || !leading()) throw error;
        context.warn(
          `job ${job.jobId}: its checkpoints cannot be read, asking again in ${RECOVERY_RETRY_MS} ms: ${(error as Error).message}`,
        );
        // An abort ends the pause early: the job was canceled or the leadership ended.
        await delay(RECOVERY_RETRY_MS, undefined, { signal: job.stop.signal }).catch(() => {});
        if (job.cancelReason !== undefined) return this.endCanceled(job, submitted);
        if (!leading()) throw error;
      }
    }
    let placement: Awaited<ReturnType<DispatcherContext["defaultPlacement"]>>;
    do {
      const found = await context.awaitTaskManagers(
        submitted.taskManagers,
        leading,
        job.stop.signal,
      );
      if (job.cancelReason !== undefined) return this.endCanceled(job, submitted);
      if (!found) {
        job.ended(
          suspendedResult(
            submitted.graph.jobId,
            "the job manager lost its leadership before it took the job over",
          ),
        );
        return undefined;
      }
      // The task managers it waited for may be lost again before it places the job.
      placement = await context.defaultPlacement(submitted.graph);
    } while (placement === undefined);
    const execution = await this.launch(
      job,
      submitted,
      placement.placement,
      {
        ...(submitted.order === undefined ? {} : { order: submitted.order }),
        configuration: context.persistence.configurationOf(submitted),
      },
      { restoreFrom },
    );
    if (execution !== undefined) {
      try {
        context.onJobRecovered?.(execution);
      } catch (error) {
        context.warn(
          `the application's onJobRecovered failed: ${(error as Error)?.stack ?? String(error)}`,
        );
      }
    }
    return execution;
  }

  /**
   * The takeover of `job` failed with `error`: suspended when the leadership ended meanwhile,
   * canceled when a cancellation was asked for, else FAILED with `error` (nothing stored).
   */
  private async takeoverFailed(
    job: DispatchedJob,
    submitted: SubmittedJob,
    error: Error,
  ): Promise<undefined> {
    if (this.context.fencingToken() !== job.token || this.closing) {
      job.ended(
        suspendedResult(
          job.jobId,
          `the job manager lost its leadership before it took the job over: ${error.message}`,
        ),
      );
      return undefined;
    }
    if (job.cancelReason !== undefined) return this.endCanceled(job, submitted);
    this.context.warn(`job ${job.jobId} could not be taken over: ${error.message}`);
    job.ended(unstartedResult(job.jobId, "FAILED", error));
    return undefined;
  }

  /**
   * `job` was canceled before it was deployed: it ends CANCELED for good, its result stored and
   * its data cleaned up as for any job canceled under this leadership.
   */
  private async endCanceled(job: DispatchedJob, submitted: SubmittedJob): Promise<undefined> {
    const reason = job.cancelReason ?? `job ${submitted.graph.name} was canceled`;
    await this.ended(
      job,
      submitted,
      unstartedResult(job.jobId, "CANCELED", new CancelledError(reason)),
    );
    return undefined;
  }

  /** Finishes the cleanup a previous leader left of a job with a dirty result. */
  private finishCleanup(entry: JobResultEntry, token: string): void {
    if (this.cleaning.has(entry.jobId)) return;
    this.cleaning.add(entry.jobId);
    const cleanup = this.context.persistence
      .cleanUp(entry.jobId, entry.status)
      .catch((error: unknown) => {
        if (this.context.fencingToken() !== token) return;
        this.context.warn(
          `the cleanup of job ${entry.jobId} is not finished: ${(error as Error).message}`,
        );
      })
      .finally(() => {
        this.cleanups.delete(cleanup);
        this.cleaning.delete(entry.jobId);
      });
    this.cleanups.add(cleanup);
  }

  /** The job's status listener: the deploy's, the job manager's, else failovers reported. */
  private statusListenerOf(
    graph: JobGraph,
    own: DeployOptions["statusListener"],
  ): (status: JobStatus, cause: Error | undefined) => void {
    const { jobStatusListener, warn } = this.context;
    return (status, cause) => {
      own?.(status, cause);
      jobStatusListener?.(graph.jobId, status, cause);
      // A job that fails over again and again (a full disk) must never loop silently.
      if (own === undefined && jobStatusListener === undefined && status === "RESTARTING") {
        warn(
          `job ${graph.name} (${graph.jobId}) fails over: ${cause?.message ?? "no cause given"}`,
        );
      }
    };
  }
}

/** What the job graph store keeps of a new job. */
function submittedJobOf(
  graph: JobGraph,
  options: DeployOptions,
  context: DispatcherContext,
): SubmittedJob {
  const configuration = options.configuration;
  let flat: JsonObject | undefined;
  if (configuration !== undefined) {
    const toObject = (configuration as { toObject?: () => Record<string, unknown> }).toObject;
    if (typeof toObject !== "function") {
      if (context.elected) {
        throw new IllegalStateError(
          `cannot submit job ${graph.name}: under high availability its configuration must be a Configuration (it is stored with the job)`,
        );
      }
    } else {
      flat = JSON.parse(JSON.stringify(toObject.call(configuration))) as JsonObject;
    }
  }
  return {
    graph,
    ...(flat === undefined ? {} : { configuration: flat }),
    ...(options.order === undefined ? {} : { order: options.order }),
    taskManagers: Math.max(1, context.connectedTaskManagers()),
    ...(options.restoreFrom !== undefined
      ? { restoredFrom: options.restoreFrom.metadataPath }
      : options.savepointRestore === undefined
        ? {}
        : {
            restoredFrom: options.savepointRestore.path,
            ...(options.savepointRestore.allowNonRestoredState === true
              ? { allowNonRestoredState: true }
              : {}),
          }),
  };
}

/** The client of a job that ended for good before: its stored result. */
function endedClient(entry: JobResultEntry): JobClient {
  const result = jobResultOfEntry(entry);
  return { jobId: result.jobId, execution: undefined, result: Promise.resolve(result) };
}

/** The result of a job suspended before it was deployed here. */
function suspendedResult(jobId: JobID, why: string): JobResult {
  return unstartedResult(jobId, "SUSPENDED", new IllegalStateError(why));
}

/** The result of a job that ended `status` with `error` before it was deployed here. */
function unstartedResult(jobId: JobID, status: JobResult["status"], error: Error): JobResult {
  return {
    jobId,
    status,
    error,
    results: new Map(),
    releaseErrors: [],
    checkpoints: { completed: 0, aborted: 0 },
    restarts: 0,
    rerunTasks: [],
  };
}

/** Why the takeover of `job` failed (its FAILED result's error); `undefined` when it did not. */
async function takeoverFailure(job: DispatchedJob): Promise<Error | undefined> {
  const result = await job.result;
  return result.status === "FAILED" && job.execution === undefined ? result.error : undefined;
}
