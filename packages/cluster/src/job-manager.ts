import {
  ErrorCodes,
  IllegalStateError,
  isSluiceError,
  type JobID,
  TimeoutError,
} from "@sluice/core";
import {
  type Configuration,
  type DeployOptions,
  JobDeployer,
  type JobDeployerOptions,
  type JobExecution,
  type JobGraph,
  type JobStatus,
  type Placement,
} from "@sluice/runtime";
import { checkShuffleMemoryFits, checkUserCode } from "@sluice/runtime/plugin";
import {
  FencingTokenError,
  HeartbeatManagerOptions,
  type HighAvailabilityServices,
  JobManagerOptions,
  type JsonValue,
  type LeaderEndpoints,
  NetworkMemoryOptions,
} from "@sluice/runtime-api";
import { emitClusterWarning } from "./cluster-warning.js";
import { HOST_LOCAL_KEYS, type ShutdownReport } from "./control-plane-messages.js";
import { readControlPlaneTls } from "./control-plane-tls.js";
import { Dispatcher, type InitializingJob, type JobClient } from "./dispatcher.js";
import { EmbeddedHighAvailabilityServices } from "./embedded-high-availability-services.js";
import { loadHighAvailabilityServices } from "./high-availability-services-loader.js";
import { JobManagerEndpoint, type RefusedTaskManager } from "./job-manager-endpoint.js";
import { JobPersistence } from "./job-persistence.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { type ShufflePluginIdentity, shufflePluginIdentity } from "./shuffle-plugin-identity.js";
import {
  type TaskManagerWait,
  TaskManagerWaiters,
  type TaskManagerWaitPhase,
} from "./task-manager-waiters.js";

/** A host and a port. */
export interface HostAndPort {
  readonly host: string;
  readonly port: number;
}

/**
 * Handles a message of the application channel from a task manager: what it returns (or resolves
 * with) is the reply to a request; a notification's reply is dropped. A thrown error goes back to
 * the task manager as a request's error reply; a notification's is reported to `onWarning`.
 */
export type JobManagerApplicationHandler = (
  taskManager: RegisteredTaskManager,
  name: string,
  payload: JsonValue,
) => JsonValue | undefined | Promise<JsonValue | undefined>;

/** Options of {@link JobManager.start}. */
export interface JobManagerStartOptions extends JobDeployerOptions {
  /**
   * Where the control plane listens (port 0 picks a free one; {@link JobManager.port} tells which).
   * Default: `jobmanager.rpc.address` (else 127.0.0.1) and `jobmanager.rpc.port`.
   */
  readonly bind?: HostAndPort;
  /**
   * The application's version: a task manager that reports another one is refused at `hello`
   * (default `""`, which matches task managers that set none).
   */
  readonly applicationVersion?: string;
  /**
   * How many task managers may be registered at once; more are refused (default: no limit). Lost
   * ones do not count, so a replacement for one is accepted.
   */
  readonly maxTaskManagers?: number;
  /** A task manager registered: its TaskExecutor runs and loaded the job manager's plugin. */
  readonly onTaskManagerRegistered?: (taskManager: RegisteredTaskManager) => void;
  /**
   * A registered task manager was lost (its connection closed, or it answered no heartbeat within
   * `heartbeat.timeout`); `cause` names it and its address. Jobs with tasks on it fail over right
   * after this call: they restart when their restart strategy allows, else they fail.
   */
  readonly onTaskManagerLost?: (taskManager: RegisteredTaskManager, cause: Error) => void;
  /** Receives the application channel's messages; without it, they are answered with an error. */
  readonly onApplicationMessage?: JobManagerApplicationHandler;
  /**
   * Malformed input from a peer, a refused task manager or TLS handshake, a failed notification
   * (default: `process.emitWarning`).
   */
  readonly onWarning?: (message: string) => void;
  /**
   * The high-availability services to run under. Default: the ones `high-availability.type`
   * names, which the job manager then closes with itself; services passed here stay open.
   */
  readonly highAvailability?: HighAvailabilityServices;
  /**
   * This job manager became the leader (`fencingToken`) and published its address: task managers
   * register with it from now on. With `high-availability.type: none`, right after start.
   */
  readonly onLeadershipGranted?: (fencingToken: string) => void;
  /**
   * This job manager lost its leadership (its lease expired, or etcd was out of reach for too
   * long): it suspended its jobs (they stop, delete nothing, and go on under the next leader),
   * dropped its task managers' connections and refuses new ones, and its store writes are
   * refused. Default: a warning. The application decides whether to exit or stay a standby.
   */
  readonly onLeadershipRevoked?: () => void;
  /**
   * A job the previous leader ran and that had not ended for good was taken over: this job
   * manager, once elected, rebuilt it from the job graph store and deployed it onto the
   * registered task managers, restored from its latest stored checkpoint. Wait for its end with
   * `execution.terminated`, or with {@link JobManager.getJob} / {@link JobManager.submitJob}.
   */
  readonly onJobRecovered?: (execution: JobExecution) => void;
  /**
   * Told of every status change of every job this job manager runs, deployed or taken over, with
   * the failure behind FAILING and RESTARTING. Without it (and without a deploy's own
   * `statusListener`), every failover is reported to `onWarning` with its cause.
   */
  readonly jobStatusListener?: (jobId: JobID, status: JobStatus, cause: Error | undefined) => void;
  /**
   * A wait for task managers began (a deployment's, a job taken over's, or a restart's for a
   * replacement of a lost one), ended as they came, or timed out (`slot.request.timeout`; the
   * restart strategy counts that attempt): what an application shows while a job cannot run. The
   * pending ones: {@link JobManager.taskManagerWaits}.
   */
  readonly onTaskManagerWait?: (wait: TaskManagerWait, phase: TaskManagerWaitPhase) => void;
}

/** Options of {@link JobManager.deploy} and {@link JobManager.submitJob}. */
export type JobManagerDeployOptions = DeployOptions;

/** Options of {@link JobManager.close} and {@link JobManager.shutDownTaskManagers}. */
export interface ShutDownOptions {
  /** Why, as task managers report it (default "the job manager is closing"). */
  readonly reason?: string;
  /** Whether the task managers end as failed (default false). */
  readonly failed?: boolean;
  /** How long to wait for their reports before dropping the connections (default 10 s). */
  readonly timeoutMs?: number;
}

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * The job side of a Sluice cluster (Flink's JobManager: its JobMaster and ResourceManager for the
 * shuffle's purposes). {@link JobManager.start} starts the runtime's `JobDeployer` (the shuffle
 * plugin's ShuffleMaster) and opens the control plane on `jobmanager.rpc.address` and
 * `jobmanager.rpc.port`. Task managers ({@link TaskManager}, in other processes or on other hosts)
 * connect, get the job manager's configuration, and register their TaskExecutor once the job
 * manager checked that they run the same control plane, Sluice release, application version and
 * shuffle plugin. Each registered task manager is a `TaskExecutorGateway`
 * ({@link RegisteredTaskManager}); {@link JobManager.deploy} deploys job graphs onto them (and onto
 * any in-process TaskExecutor) through the `JobDeployer`. Heartbeats follow `heartbeat.interval`
 * and `heartbeat.timeout`; the jobs that have tasks on a lost task manager fail over
 * (`JobExecution.notifyTaskExecutorLost`): with a restart strategy (`restart-strategy.*`, on by
 * default with checkpoints) they restart from their latest checkpoint, by default onto a task
 * manager that registers to replace the lost one.
 *
 * Under high availability (`high-availability.type`, e.g. `etcd`) the job managers of a cluster
 * elect a leader; only the leader registers task managers and runs jobs. It keeps every job in
 * the high-availability stores, and a job manager elected after it takes the jobs over by
 * itself, each from its latest stored checkpoint ({@link JobManagerStartOptions.onJobRecovered},
 * {@link submitJob}, {@link getJob}); a job manager that loses its leadership, or closes, suspends
 * its jobs and deletes nothing.
 */
export class JobManager {
  /** `ws://host:port` (`wss` with internal TLS). */
  readonly url: string;
  /** The address the control plane listens on. */
  readonly host: string;
  /** The port the control plane listens on. */
  readonly port: number;

  private readonly deployListeners = new Set<(job: JobExecution) => void>();
  private readonly initializingListeners = new Set<(job: InitializingJob) => void>();
  private readonly waiters = new TaskManagerWaiters(
    () => this.connectedTaskManagers(),
    (wait, phase) => this.waitListener?.(wait, phase),
  );
  private waitListener: JobManagerStartOptions["onTaskManagerWait"];
  private readonly dispatcher: Dispatcher;
  private closing: Promise<void> | undefined;
  private leaderToken: string | undefined;
  /** Where this job manager's REST endpoint serves, once one published it. */
  private restAddress: string | undefined;
  /** Confirmations of the leadership, one after another: the last addresses published win. */
  private confirming: Promise<void> = Promise.resolve();
  private readonly leadershipWaiters = new Set<() => void>();

  private constructor(
    /** The configuration it was started with. */
    readonly configuration: Configuration,
    /** The runtime's deployer (its ShuffleMaster); {@link JobManager.deploy} deploys through it. */
    readonly deployer: JobDeployer,
    /** The shuffle plugin every task manager must have loaded. */
    readonly plugin: ShufflePluginIdentity,
    private readonly endpoint: JobManagerEndpoint,
    /** `slot.request.timeout`: how long a restart waits for a replacement task manager. */
    private readonly slotRequestTimeoutMs: number,
    /** The high-availability services it runs under. */
    readonly highAvailability: HighAvailabilityServices,
    /** Whether {@link close} closes {@link highAvailability} (it loaded them itself). */
    private readonly ownsHighAvailability: boolean,
    /** Whether the job managers elect a leader (not `none`). */
    private readonly elected: boolean,
    private readonly warn: (message: string) => void,
    options: JobManagerStartOptions,
  ) {
    this.url = endpoint.url;
    this.host = endpoint.host;
    this.port = endpoint.port;
    const persistence = new JobPersistence({
      configuration,
      highAvailability,
      isLeader: () => this.leaderToken !== undefined,
      warn,
    });
    this.dispatcher = new Dispatcher({
      deployer,
      persistence,
      elected,
      fencingToken: () => this.leaderToken,
      defaultPlacement: async (graph) => {
        const taskManagers = this.connectedTaskManagers();
        if (taskManagers.length === 0) return undefined;
        // A task manager the job is placed on that cannot run its code is named before any task
        // starts (a replacement found later fails its deployment instead).
        await checkUserCode(
          graph,
          taskManagers,
          (taskManager) => (taskManager as RegisteredTaskManager).labelWithAddress,
        );
        // A job too large for a task manager's network memory is refused now, naming it, instead
        // of a task failing with InsufficientBuffersError part-way through the deployment; with
        // the exclusive-buffers fallback on, the application accepts degraded pools instead.
        if (!configuration.get(NetworkMemoryOptions.NETWORK_EXCLUSIVE_BUFFERS_FALLBACK)) {
          checkShuffleMemoryFits(
            graph,
            deployer.master,
            taskManagers.map((taskManager) => ({
              label: taskManager.labelWithAddress,
              networkMemory: taskManager.networkMemory,
              numberOfSlots: taskManager.numberOfSlots,
            })),
          );
        }
        return {
          placement: this.replacingPlacement(taskManagers),
          taskManagers: taskManagers.length,
        };
      },
      onDeployed: (execution) => {
        // Once it ended, no task manager keeps anything of it.
        void execution.terminated.then(() => {
          for (const taskManager of this.endpoint.taskManagers) {
            taskManager.jobEnded(execution.jobId);
          }
        });
        for (const listener of [...this.deployListeners]) listener(execution);
      },
      onJobInitializing: (job) => {
        for (const listener of [...this.initializingListeners]) listener(job);
      },
      awaitTaskManagers: (count, leading, signal) => this.awaitTaskManagers(count, leading, signal),
      connectedTaskManagers: () => this.connectedTaskManagers().length,
      ...(options.onJobRecovered === undefined ? {} : { onJobRecovered: options.onJobRecovered }),
      ...(options.jobStatusListener === undefined
        ? {}
        : { jobStatusListener: options.jobStatusListener }),
      warn,
    });
  }

  /**
   * Starts the JobDeployer (loads the shuffle plugin, starts its ShuffleMaster) and listens for
   * task managers.
   *
   * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`); ConfigurationError when the TLS files
   *   cannot be read or the address cannot be listened on (a port in use: it names the address
   *   and `jobmanager.rpc.port`); the deployer is closed again and nothing listens.
   */
  static async start(
    configuration: Configuration,
    options: JobManagerStartOptions = {},
  ): Promise<JobManager> {
    // Every key is read before anything starts: a bad value leaves nothing behind.
    const tls = readControlPlaneTls(configuration);
    const bind = options.bind ?? {
      host: configuration.getOptional(JobManagerOptions.ADDRESS) ?? "127.0.0.1",
      port: configuration.get(JobManagerOptions.PORT),
    };
    const limits = {
      maxMessageSize: configuration.get(JobManagerOptions.MAX_MESSAGE_SIZE),
      maxUnregisteredMessageSize: configuration.get(
        JobManagerOptions.MAX_UNREGISTERED_MESSAGE_SIZE,
      ),
      maxConnections: configuration.get(JobManagerOptions.MAX_CONNECTIONS),
      registrationTimeoutMs: configuration.get(JobManagerOptions.REGISTRATION_TIMEOUT),
      maxOutboundBytes: configuration.get(JobManagerOptions.MAX_OUTBOUND_BYTES_PER_CONNECTION),
      maxConcurrentRequests: configuration.get(
        JobManagerOptions.MAX_CONCURRENT_REQUESTS_PER_CONNECTION,
      ),
    };
    const heartbeatIntervalMs = configuration.get(HeartbeatManagerOptions.HEARTBEAT_INTERVAL);
    const heartbeatTimeoutMs = configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT);
    const slotRequestTimeoutMs = configuration.get(JobManagerOptions.SLOT_REQUEST_TIMEOUT);
    const shipped: Record<string, JsonValue> = {};
    for (const [key, value] of Object.entries(configuration.toObject())) {
      if (!HOST_LOCAL_KEYS.has(key)) shipped[key] = value as JsonValue;
    }
    const warn = options.onWarning ?? emitClusterWarning;
    const highAvailability =
      options.highAvailability ??
      (await loadHighAvailabilityServices(configuration, { onWarning: warn }, options.loader));
    const ownsHighAvailability = options.highAvailability === undefined;
    // With `none` there is one job manager, the leader from the start: nothing is refused.
    const elected = !(highAvailability instanceof EmbeddedHighAvailabilityServices);
    let deployer: JobDeployer;
    try {
      deployer = await JobDeployer.start(configuration, {
        ...(options.loader === undefined ? {} : { loader: options.loader }),
        ...(options.onFatalError === undefined ? {} : { onFatalError: options.onFatalError }),
      });
    } catch (error) {
      if (ownsHighAvailability) await highAvailability.close();
      throw error;
    }
    let jobManager: JobManager | undefined;
    let plugin: ShufflePluginIdentity;
    let endpoint: JobManagerEndpoint;
    try {
      plugin = shufflePluginIdentity(deployer.plugin);
      endpoint = await JobManagerEndpoint.listen({
        host: bind.host,
        port: bind.port,
        addressKeys:
          options.bind === undefined
            ? { hostKey: JobManagerOptions.ADDRESS.key, portKey: JobManagerOptions.PORT.key }
            : { hostKey: "the bind option", portKey: "the bind option" },
        tls,
        limits,
        deploymentTimeoutMs: configuration.get(JobManagerOptions.DEPLOYMENT_TIMEOUT),
        heartbeatIntervalMs,
        heartbeatTimeoutMs,
        applicationVersion: options.applicationVersion ?? "",
        plugin,
        maxTaskManagers: options.maxTaskManagers ?? Number.POSITIVE_INFINITY,
        taskManagerConfiguration: shipped,
        ...(elected ? { leadership: () => jobManager?.leaderToken } : {}),
        events: {
          onRegistered: (taskManager) => {
            callBack(warn, "onTaskManagerRegistered", () =>
              options.onTaskManagerRegistered?.(taskManager),
            );
            jobManager?.waiters.wake();
          },
          onLost: (taskManager, cause) => {
            callBack(warn, "onTaskManagerLost", () =>
              options.onTaskManagerLost?.(taskManager, cause),
            );
            jobManager?.failJobsOn(taskManager, cause);
          },
          onApplicationMessage: (taskManager, name, payload) => {
            if (options.onApplicationMessage === undefined) {
              throw new IllegalStateError(
                `the job manager's application handles no messages (got ${name} from ${taskManager.label})`,
              );
            }
            return options.onApplicationMessage(taskManager, name, payload);
          },
          onWarning: warn,
        },
      });
    } catch (error) {
      await deployer.close();
      if (ownsHighAvailability) await highAvailability.close();
      throw error;
    }
    const started = new JobManager(
      configuration,
      deployer,
      plugin,
      endpoint,
      slotRequestTimeoutMs,
      highAvailability,
      ownsHighAvailability,
      elected,
      warn,
      options,
    );
    jobManager = started;
    started.waitListener = (wait, phase) =>
      callBack(warn, "onTaskManagerWait", () => options.onTaskManagerWait?.(wait, phase));
    try {
      await started.runForLeadership(options, warn);
      // Without an election it leads at once: deploy may be called as soon as start resolves.
      if (!elected) await started.waitForLeadership(slotRequestTimeoutMs);
    } catch (error) {
      await started.close();
      throw error;
    }
    return started;
  }

  /**
   * The fencing token of this job manager's leadership, or `undefined` while it does not lead
   * (a standby waiting for the leader to go, or deposed).
   */
  get fencingToken(): string | undefined {
    return this.leaderToken;
  }

  /**
   * Resolves once this job manager leads (at once when it does already).
   *
   * @throws TimeoutError after `timeoutMs`; IllegalStateError when it closes first (or is
   *   closing).
   */
  waitForLeadership(timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = () => {
        // A closing job manager leads no more, even before it resigned.
        if (this.closing !== undefined) {
          done();
          reject(new IllegalStateError("the job manager is closing: it does not lead"));
        } else if (this.leaderToken !== undefined) {
          done();
          resolve(this.leaderToken);
        }
      };
      const timer = setTimeout(() => {
        done();
        reject(
          new TimeoutError(
            `the job manager at ${this.url} was not elected leader within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const done = () => {
        clearTimeout(timer);
        this.leadershipWaiters.delete(check);
      };
      this.leadershipWaiters.add(check);
      check();
    });
  }

  /**
   * Publishes where this job manager's REST endpoint serves (`http://host:port/`), beside its
   * own address, for the clients that follow the leader through high availability (`sluice run`,
   * `list`, `cancel`: Flink's cluster REST endpoint leader). `WebMonitorEndpoint.start` calls it.
   * It takes effect at once while this job manager leads, else when it is elected; a failure to
   * publish is reported to `onWarning` (the leadership itself is not affected).
   */
  async publishRestAddress(restAddress: string | undefined): Promise<void> {
    this.restAddress = restAddress;
    const token = this.leaderToken;
    if (token === undefined) return;
    await this.confirmLeadership(token).catch((error: Error) =>
      this.warn(`the job manager could not publish its REST endpoint's address: ${error.message}`),
    );
  }

  /** What this job manager publishes beside its address while it leads. */
  private publishedEndpoints(): LeaderEndpoints {
    const shuffleMasterAddress = this.deployer.master.getAdvertisedAddress?.();
    return {
      ...(this.restAddress === undefined ? {} : { restAddress: this.restAddress }),
      ...(shuffleMasterAddress === undefined ? {} : { shuffleMasterAddress }),
    };
  }

  /** Confirms `token` with this job manager's addresses, after the confirmations before it. */
  private confirmLeadership(token: string): Promise<void> {
    const election = this.highAvailability.getJobManagerLeaderElection();
    const confirmed = this.confirming.then(() =>
      election.confirmLeadership(token, this.url, this.publishedEndpoints()),
    );
    this.confirming = confirmed.catch(() => undefined);
    return confirmed;
  }

  /** Joins the job managers' election; leads once granted and its address is published. */
  private async runForLeadership(
    options: JobManagerStartOptions,
    warn: (message: string) => void,
  ): Promise<void> {
    const election = this.highAvailability.getJobManagerLeaderElection();
    const wake = () => {
      for (const waiter of [...this.leadershipWaiters]) waiter();
    };
    await election.startLeaderElection({
      grantLeadership: (token) => {
        // Task managers find the leader by the address it confirms, so it confirms first.
        const published = this.restAddress;
        this.confirmLeadership(token).then(
          () => {
            if (!election.hasLeadership(token) || this.closing !== undefined) return;
            this.leaderToken = token;
            // The REST endpoint started while this confirmation was on its way.
            if (this.restAddress !== published) void this.publishRestAddress(this.restAddress);
            // A leadership after a lost one: its task managers register again.
            this.endpoint.forgetLostTaskManagers();
            // Before anyone learns of the leadership: a submission waits for the recovery.
            this.dispatcher.grantLeadership(token);
            callBack(warn, "onLeadershipGranted", () => options.onLeadershipGranted?.(token));
            wake();
          },
          (error: Error) =>
            warn(`the job manager could not confirm its leadership: ${error.message}`),
        );
      },
      revokeLeadership: () => {
        const was = this.leaderToken;
        this.leaderToken = undefined;
        if (was === undefined || this.closing !== undefined) return;
        // A deposed leader must stop acting at once: its jobs are suspended (nothing deleted,
        // nothing stored), its task managers follow the new leader.
        this.dispatcher.revokeLeadership(
          new FencingTokenError(
            `the job manager at ${this.url} lost its leadership (fencing token ${was}): the job goes on under the next leader`,
          ),
        );
        for (const taskManager of this.connectedTaskManagers()) {
          taskManager.disconnect(`the job manager at ${this.url} lost its leadership`);
        }
        if (options.onLeadershipRevoked === undefined) {
          warn(`the job manager at ${this.url} lost its leadership (fencing token ${was})`);
        } else {
          callBack(warn, "onLeadershipRevoked", () => options.onLeadershipRevoked?.());
        }
        wake();
      },
      handleError: (error) => warn(`the job manager's leader election failed: ${error.message}`),
    });
  }

  /**
   * Every task manager that registered during this job manager's current (or last) leadership, in
   * registration order (lost ones too: see `connected`).
   */
  get taskManagers(): readonly RegisteredTaskManager[] {
    return [...this.endpoint.taskManagers];
  }

  /** The latest task managers the job manager refused (at most 16), oldest first, with why. */
  get refusedTaskManagers(): readonly RefusedTaskManager[] {
    return [...this.endpoint.refused];
  }

  /** The waits for task managers not ended yet, oldest first (see `onTaskManagerWait`). */
  get taskManagerWaits(): readonly TaskManagerWait[] {
    return this.waiters.pending;
  }

  /**
   * Resolves with the first `count` connected task managers once that many are registered.
   *
   * @param timeoutMs - how long to wait; default `slot.request.timeout` (Flink's bound on how long
   *   a job waits for the resources it needs, which the cluster's restarts use too).
   * @throws TimeoutError after `timeoutMs`, naming the task managers the job manager refused
   *   (the latest 16) and why (another shuffle plugin, another release or application version, ...);
   *   IllegalStateError when the job manager closes first.
   */
  waitForTaskManagers(
    count: number,
    timeoutMs: number = this.slotRequestTimeoutMs,
  ): Promise<readonly RegisteredTaskManager[]> {
    const what = `${count} task manager${count === 1 ? "" : "s"} to register`;
    const key =
      timeoutMs === this.slotRequestTimeoutMs
        ? JobManagerOptions.SLOT_REQUEST_TIMEOUT.key
        : undefined;
    const timeout = { ms: timeoutMs, ...(key === undefined ? {} : { key }) };
    return this.waiters.waitFor(count, timeout, undefined, what, () => {
      const registered = this.connectedTaskManagers().length;
      const limit =
        timeoutMs === this.slotRequestTimeoutMs
          ? ` (${JobManagerOptions.SLOT_REQUEST_TIMEOUT.key})`
          : "";
      // Also the ones refused before the wait began: in a guide's set-up, they connect first.
      const { refused } = this.endpoint;
      const why =
        refused.length === 0
          ? "; no task manager was refused"
          : `; refused: ${refused.map((r) => `${r.label}: ${r.reason.message}`).join("; ")}`;
      return `${registered} of ${count} task managers registered with the job manager at ${this.url} within ${timeoutMs} ms${limit}${why}`;
    });
  }

  /**
   * Deploys `graph` through the JobDeployer; follow it through the returned `JobExecution`. When a
   * task manager with tasks of the job is lost, the job fails over (`notifyTaskExecutorLost`): it
   * restarts if its restart strategy allows, else it fails; a job deployed on `deployer` directly
   * does not get that.
   *
   * The job is kept in the high-availability services' job graph store (as `JobGraphCodec` JSON,
   * with its configuration), its checkpoints in the completed-checkpoint store and its checkpoint
   * ids come from their counter: a job manager elected after this one takes it over by itself,
   * from its latest stored checkpoint ({@link JobManagerStartOptions.onJobRecovered}). Once the
   * job ended for good, its result goes into the job result store and the rest is removed (its
   * checkpoints as `externalized-checkpoint-retention` says). A job with the id of one this job
   * manager runs already is that one's execution (it is not deployed twice).
   *
   * @param placement - picks the TaskExecutorGateway of each subtask: a {@link RegisteredTaskManager},
   *   or a TaskExecutor of this process. Default: subtask `i` of every vertex runs on the `i mod n`-th
   *   of the `n` task slots of the task managers connected now (each one's
   *   `taskmanager.numberOfTaskSlots` in turn); when the job restarts after losing one of them, its
   *   subtasks go to the next task manager that registers and runs none of the job's tasks (a
   *   replacement), waited for up to `slot.request.timeout`. A job taken over by another job
   *   manager runs on the default placement there.
   * @throws FencingTokenError when this job manager does not lead; IllegalStateError when no
   *   placement is given and no task manager is connected, or when the job ended for good before
   *   (see {@link submitJob}, which gives its stored result instead).
   * @throws TaskDeploymentError (`SLUICE_ERR_TASK_DEPLOYMENT`) when no placement is given and a
   *   connected task manager cannot load the graph's job module or lacks a name the graph uses:
   *   the message names each such task manager, its host and what it lacks; nothing is deployed.
   */
  async deploy(
    graph: JobGraph,
    placement?: Placement,
    options: JobManagerDeployOptions = {},
  ): Promise<JobExecution> {
    const client = await this.dispatcher.submitJob(graph, placement, options);
    if (client.execution === undefined) {
      const result = await client.result;
      throw new IllegalStateError(
        `job ${graph.name} (${graph.jobId}) ended ${result.status} before and is not run again; submitJob or getJob gives its result`,
      );
    }
    return client.execution;
  }

  /**
   * The jobs this job manager runs that have not ended (deployed, submitted, or taken over at its
   * election), in the order they were deployed.
   */
  get jobs(): readonly JobExecution[] {
    return this.dispatcher.executions;
  }

  /**
   * Calls `listener` with every job this job manager deploys from now on (through {@link deploy},
   * {@link submitJob}, or taken over at its election), once it started (a watcher such as the
   * REST endpoint, which keeps what it shows of ended jobs itself). The listener must not throw.
   * Returns the function that stops the calls.
   */
  onJobDeployed(listener: (job: JobExecution) => void): () => void {
    this.deployListeners.add(listener);
    return () => this.deployListeners.delete(listener);
  }

  /**
   * The jobs this job manager takes over and has not deployed yet (Flink's INITIALIZING: it reads
   * each one's latest checkpoint and waits for the task managers it ran on), in the order it
   * began to take them over. Each one is in {@link jobs} once deployed.
   */
  get initializingJobs(): readonly InitializingJob[] {
    return this.dispatcher.initializing;
  }

  /**
   * Whether this job manager leads and is still listing the jobs it takes over at its election
   * (from the job graph store): until it is done, a job it does not know yet may be one that it
   * is about to take over (the REST endpoint answers 503 for it, not 404).
   */
  get recoveringJobs(): boolean {
    return this.dispatcher.recovering;
  }

  /**
   * Calls `listener` with every job this job manager begins to take over from now on (at its
   * election, or when a job stored but not taken over then is submitted), before it is deployed:
   * {@link onJobDeployed} hears of it once deployed. The listener must not throw. Returns the
   * function that stops the calls.
   */
  onJobInitializing(listener: (job: InitializingJob) => void): () => void {
    this.initializingListeners.add(listener);
    return () => this.initializingListeners.delete(listener);
  }

  /**
   * Runs `graph` on the default placement, unless it runs here already or ended for good before
   * (Flink's `Dispatcher.submitJob`): resolves with its {@link JobClient} — the execution this
   * job manager runs (deployed now, or taken over at its election), or the stored result of a
   * job that ended before, under this job manager or another. An application under high
   * availability runs its `main` on every job manager that becomes leader and submits its job
   * with a fixed id (`new JobGraph(name, jobId)`): only the first leader runs it from the start.
   * See {@link deploy} for what is stored.
   *
   * @throws as {@link deploy}, except for a job that ended before.
   */
  submitJob(graph: JobGraph, options: JobManagerDeployOptions = {}): Promise<JobClient> {
    return this.dispatcher.submitJob(graph, undefined, options);
  }

  /**
   * The job `jobId`: the one this job manager runs (after the jobs it takes over at its election
   * are known), or the stored result of one that ended for good under any job manager of the
   * cluster; `undefined` when it knows neither (a standby does not run jobs: it knows the ended
   * ones only).
   */
  getJob(jobId: JobID | string): Promise<JobClient | undefined> {
    return this.dispatcher.getJob(jobId);
  }

  /**
   * Tells every connected task manager that it is done (see {@link RegisteredTaskManager.shutdown})
   * and collects their reports; a task manager that does not answer within the timeout is
   * disconnected, and its entry is the error.
   */
  async shutDownTaskManagers(
    options: ShutDownOptions = {},
  ): Promise<ReadonlyMap<RegisteredTaskManager, ShutdownReport | Error>> {
    const reason = options.reason ?? "the job manager is closing";
    const failed = options.failed ?? false;
    const timeoutMs = options.timeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    const outcomes = new Map<RegisteredTaskManager, ShutdownReport | Error>();
    await Promise.all(
      this.connectedTaskManagers().map(async (taskManager) => {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new TimeoutError(
                  `${taskManager.label} did not report its shutdown within ${timeoutMs} ms`,
                ),
              ),
            timeoutMs,
          );
        });
        try {
          outcomes.set(
            taskManager,
            await Promise.race([taskManager.shutdown(reason, failed), timeout]),
          );
        } catch (error) {
          taskManager.disconnect(reason);
          outcomes.set(taskManager, error instanceof Error ? error : new Error(String(error)));
        } finally {
          clearTimeout(timer);
        }
      }),
    );
    return outcomes;
  }

  /**
   * Closes the job manager. Without high availability (`none`) it shuts down every connected
   * task manager ({@link shutDownTaskManagers}), and the jobs still running are canceled (and end
   * for good). Under high availability the cluster goes on without it: the jobs still running
   * are suspended (Flink's SUSPENDED: their checkpoints stay, and the job manager elected next
   * takes them over from the latest one), and the task managers are only disconnected, to
   * register with that leader (call {@link shutDownTaskManagers} first to end them). Then it
   * drops the control plane's connections, stops listening, closes the JobDeployer and gives up
   * its leadership. Idempotent.
   */
  close(options: ShutDownOptions = {}): Promise<void> {
    this.closing ??= (async () => {
      this.waiters.close();
      for (const waiter of [...this.leadershipWaiters]) waiter();
      this.dispatcher.close();
      if (this.elected) {
        const reason = options.reason ?? `the job manager at ${this.url} is closing`;
        for (const taskManager of this.connectedTaskManagers()) taskManager.disconnect(reason);
      } else {
        await this.shutDownTaskManagers(options);
      }
      await this.endpoint.close();
      await this.deployer.close();
      await this.dispatcher.settled();
      // Resigning lets a standby take over at once instead of a lease later.
      if (this.ownsHighAvailability) await this.highAvailability.close();
    })();
    return this.closing;
  }

  /**
   * Resolves once `count` task managers are connected, or after `slot.request.timeout` once at
   * least one is (a job taken over runs on what is there); false when `leading()` turned false,
   * `signal` aborted or the job manager closed first.
   */
  private async awaitTaskManagers(
    count: number,
    leading: () => boolean,
    signal: AbortSignal,
  ): Promise<boolean> {
    let needed = count;
    while (leading() && !signal.aborted) {
      try {
        await this.waiters.waitFor(
          needed,
          needed > 1
            ? { ms: this.slotRequestTimeoutMs, key: JobManagerOptions.SLOT_REQUEST_TIMEOUT.key }
            : undefined,
          undefined,
          `${needed} task manager${needed === 1 ? "" : "s"} to run the jobs taken over`,
          () => `${count} task managers did not register within ${this.slotRequestTimeoutMs} ms`,
          signal,
        );
        return leading();
      } catch (error) {
        if (!isSluiceError(error, ErrorCodes.TIMEOUT)) return false;
        needed = 1;
      }
    }
    return false;
  }

  /**
   * Subtask `i` on the `i mod n`-th of the `n` task slots of `taskManagers` (each task manager's
   * slots one after the other, as Flink fills a task manager's slots first): a task manager with
   * `taskmanager.numberOfTaskSlots` 2 runs two subtasks of each vertex. A lost task manager is
   * replaced, with all its slots and for good, by the first connected task manager that is none
   * of the placement's current ones.
   */
  private replacingPlacement(taskManagers: readonly RegisteredTaskManager[]): Placement {
    const owners = [...taskManagers];
    const slots = taskManagers.flatMap((taskManager, owner) =>
      Array.from({ length: taskManager.numberOfSlots }, () => owner),
    );
    /** The replacement of a lost owner being waited for: its subtasks all wait for the same. */
    const replacing = new Map<number, Promise<RegisteredTaskManager>>();
    const timeoutMs = this.slotRequestTimeoutMs;
    return async (vertex, subtask, context) => {
      const owner = slots[subtask % slots.length] as number;
      const current = owners[owner] as RegisteredTaskManager;
      if (!context.isLost(current) && current.connected) return current;
      let replacement = replacing.get(owner);
      if (replacement === undefined) {
        replacement = this.waiters
          .waitFor(
            1,
            { ms: timeoutMs, key: JobManagerOptions.SLOT_REQUEST_TIMEOUT.key },
            new Set(owners),
            `a task manager to replace the lost ${current.labelWithAddress}, which ran ${vertex.name} (${subtask + 1}/${vertex.parallelism})`,
            () =>
              `no task manager registered within ${timeoutMs} ms (${JobManagerOptions.SLOT_REQUEST_TIMEOUT.key}) to replace the lost ${current.labelWithAddress}, which ran ${vertex.name} (${subtask + 1}/${vertex.parallelism})`,
          )
          .then(([found]) => {
            owners[owner] = found as RegisteredTaskManager;
            return found as RegisteredTaskManager;
          })
          .finally(() => replacing.delete(owner));
        replacing.set(owner, replacement);
      }
      return replacement;
    };
  }

  private connectedTaskManagers(): RegisteredTaskManager[] {
    return this.endpoint.taskManagers.filter((taskManager) => taskManager.connected);
  }

  /** Every running job with a task on the lost task manager fails with `cause`. */
  private failJobsOn(taskManager: RegisteredTaskManager, cause: Error): void {
    for (const execution of this.dispatcher.executions) {
      if (execution.executionVertices.some((vertex) => vertex.gateway === taskManager)) {
        execution.notifyTaskExecutorLost(taskManager, cause);
      }
    }
  }
}

/**
 * Runs an application callback; what it throws is reported, so that it cannot stop the job
 * manager's own bookkeeping (waking waiters, failing the jobs of a lost task manager).
 */
function callBack(warn: (message: string) => void, name: string, callback: () => void): void {
  try {
    callback();
  } catch (error) {
    warn(`the application's ${name} failed: ${(error as Error)?.stack ?? String(error)}`);
  }
}
