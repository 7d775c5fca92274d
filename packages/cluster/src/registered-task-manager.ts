import { type ExecutionAttemptID, IllegalStateError, type JobID, TimeoutError } from "@sluice/core";
import {
  type JobMasterGateway,
  type MetricEndpoint,
  ScopeVariables,
  serializeThrowable,
  type TaskExecutorGateway,
  type TaskManagerLocation,
} from "@sluice/runtime/plugin";
import { type ExecutionState, JobManagerOptions, type JsonValue } from "@sluice/runtime-api";
import type {
  JobManagerMethods,
  ShutdownReport,
  TaskManagerMethods,
} from "./control-plane-messages.js";
import { forwardingGateway } from "./gateway-forwarding.js";
import type { RemoteMetricDump } from "./metric-query.js";
import type { RpcPeer } from "./rpc-peer.js";
import {
  type TaskExecutorGatewayCaller,
  TaskExecutorGatewayMethods,
} from "./task-executor-gateway-methods.js";

/** An execution attempt deployed to a task manager, until it reports its final state. */
interface DeployedAttempt {
  readonly jobId: string;
  /** Fails the attempt when it does not report RUNNING in time. */
  timer?: NodeJS.Timeout;
}

/** The states of an attempt that has not started running yet. */
const STILL_DEPLOYING: ReadonlySet<ExecutionState> = new Set([
  "CREATED",
  "SCHEDULED",
  "DEPLOYING",
  "INITIALIZING",
]);

/** The states after which an attempt reports nothing more. */
const FINAL_STATES: ReadonlySet<ExecutionState> = new Set(["FINISHED", "CANCELED", "FAILED"]);

/** How many ended attempts a task manager's metric answers may still name. */
const MAX_ENDED_ATTEMPTS = 1024;

/** The job manager's end of a control connection to a task manager. */
export type TaskManagerConnection = RpcPeer<typeof JobManagerMethods, typeof TaskManagerMethods>;

/** What a task manager told the job manager about itself when it registered. */
export interface TaskManagerInfo {
  /** Registration order, from 0. */
  readonly index: number;
  /** Its process id. */
  readonly pid: number;
  /** The name of its host. */
  readonly hostname: string;
  /** Where its control connection came from (`10.77.0.2:40122`). */
  readonly remoteAddress: string;
  /** Its TaskExecutor's resource id and data port. */
  readonly location: TaskManagerLocation;
  /** Where its pull-based metric reporters serve (none without such reporters). */
  readonly metricEndpoints?: readonly MetricEndpoint[];
  /** The task slots it offers (`taskmanager.numberOfTaskSlots`). */
  readonly numberOfSlots: number;
  /** Its network memory in bytes, when it said (task managers of older releases do not). */
  readonly networkMemory?: number;
}

/**
 * A task manager that registered with the job manager, as the job side sees it: the
 * `TaskExecutorGateway` the `JobDeployer` deploys through (Flink's `TaskExecutorGateway` over
 * RPC). Its gateway methods are the forwarding table's, each a request on the task manager's
 * connection; it remembers which job master each job's tasks report to. It also carries the
 * application channel to that task manager and its shutdown.
 */
export class RegisteredTaskManager
  extends forwardingGateway<TaskExecutorGateway, TaskExecutorGatewayCaller>(
    TaskExecutorGatewayMethods,
  )
  implements TaskExecutorGateway
{
  /** Registration order, from 0: `task manager 0`. */
  readonly index: number;
  /** Its process id. */
  readonly pid: number;
  /** The name of its host. */
  readonly hostname: string;
  /** Where its control connection came from. */
  readonly remoteAddress: string;
  /** Its TaskExecutor's resource id, announced host (`taskmanager.host`) and data port. */
  readonly location: TaskManagerLocation;
  /**
   * Where its pull-based metric reporters serve, as it announced them at registration (e.g. its
   * Prometheus endpoint); empty without such reporters.
   */
  readonly metricEndpoints: readonly MetricEndpoint[];
  /**
   * The task slots it offers (`taskmanager.numberOfTaskSlots`): the job manager's default
   * placement puts that many subtasks of a vertex on it (Flink's slots).
   */
  readonly numberOfSlots: number;
  /** Its network memory in bytes, when it said (see {@link TaskManagerInfo.networkMemory}). */
  readonly networkMemory: number | undefined;

  private readonly connection: TaskManagerConnection;
  private readonly jobMasters: Map<string, JobMasterGateway>;
  /**
   * The execution attempts deployed here that have not reported a final state, each with its
   * job: the only ones this task manager may report about. Entries come only from the job
   * manager's own deployments, so a peer cannot grow it.
   */
  private readonly attempts: Map<string, DeployedAttempt>;
  /**
   * The latest attempts that ended here, each with its job (at most {@link MAX_ENDED_ATTEMPTS}): a
   * metric answer in flight when one ended may still name it. A job's are forgotten once it ended
   * and no metric query is in flight.
   */
  private readonly endedAttempts = new Map<string, string>();
  /** Metric queries sent and not answered yet. */
  private metricQueriesInFlight = 0;
  /** Jobs that ended while a metric query was in flight: their ended attempts go after it. */
  private readonly endedJobs = new Set<string>();
  private readonly onRefusedMetrics: (message: string) => void;
  private ending = false;

  /** @internal Created by the job manager when a task manager registers. */
  constructor(
    info: TaskManagerInfo,
    connection: TaskManagerConnection,
    onUndelivered: (method: string, error: unknown) => void,
    onRefusedMetrics: (message: string) => void = () => {},
    deploymentTimeoutMs = Number.POSITIVE_INFINITY,
  ) {
    const jobMasters = new Map<string, JobMasterGateway>();
    const attempts = new Map<string, DeployedAttempt>();
    super({
      caller: {
        routeJobMaster: (jobId: JobID, jobMaster: JobMasterGateway) =>
          jobMasters.set(jobId.toString(), jobMaster),
        deployAttempt: (jobId: JobID, attemptId: ExecutionAttemptID) => {
          const deployed: DeployedAttempt = { jobId: jobId.toString() };
          if (Number.isFinite(deploymentTimeoutMs)) {
            deployed.timer = setTimeout(
              () => this.deploymentTimedOut(jobId, attemptId, deploymentTimeoutMs),
              deploymentTimeoutMs,
            );
            deployed.timer.unref();
          }
          attempts.set(attemptId.toString(), deployed);
        },
      },
      request: (method, params) => connection.call(method as never, params as never),
      onUndelivered,
    });
    this.jobMasters = jobMasters;
    this.attempts = attempts;
    this.onRefusedMetrics = onRefusedMetrics;
    this.index = info.index;
    this.pid = info.pid;
    this.hostname = info.hostname;
    this.remoteAddress = info.remoteAddress;
    this.networkMemory = info.networkMemory;
    this.location = info.location;
    this.metricEndpoints = info.metricEndpoints ?? [];
    this.numberOfSlots = info.numberOfSlots;
    this.connection = connection;
  }

  /** `task manager 1 (pid 4242)`. */
  get label(): string {
    return `task manager ${this.index} (pid ${this.pid})`;
  }

  /** `task manager 1 (pid 4242) at 10.77.0.2`: the label with the host it announced. */
  get labelWithAddress(): string {
    return `${this.label} at ${this.location.host}`;
  }

  /**
   * True while its connection is open and it was neither shut down nor disconnected; false once
   * it was lost.
   */
  get connected(): boolean {
    return !this.ending && this.connection.isOpen;
  }

  /**
   * @internal The job master of `jobId`'s tasks here, once a task of that job was submitted.
   */
  jobMasterOf(jobId: JobID): JobMasterGateway | undefined {
    return this.jobMasters.get(jobId.toString());
  }

  /**
   * @internal Refuses a report (`what`: a state update, a checkpoint acknowledgement or decline)
   * about `attemptId` of `jobId` unless that attempt was deployed to this task manager and has not
   * ended: a task manager speaks only for its own tasks (Flink checks the attempt and its
   * location).
   *
   * @throws IllegalStateError naming this task manager, the attempt and why it may not report it.
   */
  checkReporter(jobId: JobID, attemptId: ExecutionAttemptID, what: string): void {
    const job = this.attempts.get(attemptId.toString())?.jobId;
    if (job === jobId.toString()) return;
    const why =
      job === undefined
        ? "which is not deployed to it (another task manager's, an ended one or none)"
        : `which belongs to job ${job}`;
    throw new IllegalStateError(
      `${this.labelWithAddress} sent ${what} for execution attempt ${attemptId} of job ${jobId}, ${why}; a task manager may report only the tasks deployed to it`,
    );
  }

  /**
   * @internal `attemptId` reported `state`: once RUNNING its deployment is done; once final,
   * nothing more may be reported about it.
   */
  attemptReported(attemptId: ExecutionAttemptID, state: ExecutionState): void {
    const id = attemptId.toString();
    const deployed = this.attempts.get(id);
    if (deployed === undefined || STILL_DEPLOYING.has(state)) return;
    clearTimeout(deployed.timer);
    if (!FINAL_STATES.has(state)) return;
    this.attempts.delete(id);
    this.endedAttempts.set(id, deployed.jobId);
    if (this.endedAttempts.size > MAX_ENDED_ATTEMPTS) {
      this.endedAttempts.delete(this.endedAttempts.keys().next().value as string);
    }
    // Nothing of the job runs here any more: its job master is routed again by its next
    // deployment here, if any, and is not kept reachable from this task manager meanwhile.
    if (![...this.attempts.values()].some((attempt) => attempt.jobId === deployed.jobId)) {
      this.jobMasters.delete(deployed.jobId);
    }
  }

  /**
   * @internal Job `jobId` ended: this task manager forgets it (its job master and any attempt
   * that never reported), so that nothing of a finished job stays reachable from here.
   */
  jobEnded(jobId: JobID): void {
    const job = jobId.toString();
    this.jobMasters.delete(job);
    for (const [id, attempt] of this.attempts) {
      if (attempt.jobId !== job) continue;
      clearTimeout(attempt.timer);
      this.attempts.delete(id);
    }
    this.endedJobs.add(job);
    if (this.metricQueriesInFlight === 0) this.forgetEndedJobs();
  }

  /** Forgets the ended attempts of the jobs that ended (no metric answer can name them now). */
  private forgetEndedJobs(): void {
    if (this.endedJobs.size === 0) return;
    for (const [id, job] of this.endedAttempts) {
      if (this.endedJobs.has(job)) this.endedAttempts.delete(id);
    }
    this.endedJobs.clear();
  }

  /**
   * Calls the task manager's application handler with `name` and `payload` (the application
   * channel); resolves with what it returned.
   *
   * @throws the handler's error (same code); RemoteTransportError when the connection is gone.
   */
  async call(name: string, payload: JsonValue): Promise<JsonValue> {
    return this.connection.call("application", { name, payload });
  }

  /**
   * Every metric of the task manager with its current value (Flink's metric query): its
   * TaskExecutor's registry, task manager, job and task scopes. A task's metrics are gone once it
   * ended. A task's metric whose attempt is not deployed here is left out (and reported as a
   * warning): a task manager answers only for its own tasks.
   *
   * @throws RemoteTransportError or TimeoutError when the task manager cannot answer.
   */
  async queryMetrics(): Promise<RemoteMetricDump[]> {
    this.metricQueriesInFlight++;
    let own: RemoteMetricDump[];
    let metrics: RemoteMetricDump[];
    try {
      ({ metrics } = await this.connection.call("queryMetrics", {}));
      own = metrics.filter((metric) => {
        const attempt = metric.variables[ScopeVariables.TASK_ATTEMPT_ID];
        return (
          attempt === undefined || this.attempts.has(attempt) || this.endedAttempts.has(attempt)
        );
      });
    } finally {
      this.metricQueriesInFlight--;
      if (this.metricQueriesInFlight === 0) this.forgetEndedJobs();
    }
    if (own.length < metrics.length) {
      this.onRefusedMetrics(
        `left out ${metrics.length - own.length} of the ${metrics.length} metrics ${this.labelWithAddress} answered with: they name execution attempts not deployed to it`,
      );
    }
    return own;
  }

  /** Sends `name` and `payload` to the task manager's application handler, without a reply. */
  notify(name: string, payload: JsonValue): void {
    this.connection.notify("application", { name, payload });
  }

  /**
   * Tells the task manager it is done: it closes its TaskExecutor (after waiting briefly, when
   * not `failed`, for consumers to release its partitions), reports what it held at close, and
   * ends. The connection is closed once the report arrived.
   *
   * @throws RemoteTransportError or TimeoutError when it cannot answer; the connection is then
   *   closed as well.
   */
  async shutdown(reason: string, failed: boolean): Promise<ShutdownReport> {
    this.ending = true;
    try {
      return await this.connection.call("shutdown", { reason, failed });
    } finally {
      this.connection.close(failed ? "the job failed" : "shut down");
    }
  }

  /** Drops the connection without a shutdown request: the task manager sees its job manager lost. */
  disconnect(reason: string): void {
    this.ending = true;
    this.connection.close(reason);
  }

  /** @internal True once the job manager ended it on purpose: its disconnect is no loss. */
  get endedOnPurpose(): boolean {
    return this.ending;
  }

  /** @internal Marks it ended on purpose (the job manager is closing, or it was lost). */
  markEnded(): void {
    this.ending = true;
    for (const deployed of this.attempts.values()) clearTimeout(deployed.timer);
  }

  /**
   * The attempt did not report RUNNING within `jobmanager.deployment.timeout`: it fails, as if
   * this task manager had reported it, so that its job restarts or fails instead of waiting
   * for a task that may never run.
   */
  private deploymentTimedOut(jobId: JobID, attemptId: ExecutionAttemptID, timeoutMs: number): void {
    const jobMaster = this.jobMasters.get(jobId.toString());
    if (this.ending || !this.attempts.has(attemptId.toString()) || jobMaster === undefined) return;
    this.attemptReported(attemptId, "FAILED");
    jobMaster.updateTaskExecutionState({
      jobId,
      executionAttemptId: attemptId,
      state: "FAILED",
      error: serializeThrowable(
        new TimeoutError(
          `execution attempt ${attemptId} of job ${jobId}, deployed to ${this.labelWithAddress}, did not report RUNNING within ${timeoutMs} ms (${JobManagerOptions.DEPLOYMENT_TIMEOUT.key})`,
        ),
      ),
    });
  }
}
