import { hostname } from "node:os";
import { setTimeout as delay } from "node:timers/promises";
import {
  ConfigurationError,
  deferred,
  ErrorCodes,
  IllegalStateError,
  isSluiceError,
} from "@sluice/core";
import { type Configuration, TaskExecutor, type TaskExecutorOptions } from "@sluice/runtime";
import {
  HeartbeatManagerOptions,
  JobManagerOptions,
  type JsonValue,
  NettyShuffleEnvironmentOptions,
  type ShuffleEnvironment,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import { emitClusterWarning } from "./cluster-warning.js";
import {
  type ConnectedJobManager,
  connectToJobManager,
  type JobManagerConnection,
} from "./connect-to-job-manager.js";
import { connectToJobManagerLeader } from "./connect-to-job-manager-leader.js";
import {
  CONTROL_PLANE_VERSION,
  HOST_LOCAL_KEYS,
  type ShutdownReport,
  SLUICE_VERSION,
} from "./control-plane-messages.js";
import { readControlPlaneTls } from "./control-plane-tls.js";
import { serveGateway } from "./gateway-forwarding.js";
import { HeartbeatMonitor } from "./heartbeat-monitor.js";
import type { HostAndPort } from "./job-manager.js";
import { toRemoteMetricDumps } from "./metric-query.js";
import { RemoteJobMaster } from "./remote-job-master.js";
import { shufflePluginIdentity } from "./shuffle-plugin-identity.js";
import { TaskExecutorGatewayMethods } from "./task-executor-gateway-methods.js";

/** How long a clean shutdown waits for consumers to release this worker's partitions. */
const RELEASE_WAIT_MS = 3_000;
/** How long closing the TaskExecutor may take when the job manager is gone. */
const CLOSE_DEADLINE_MS = 2_000;
/** How long a refused connection to the job manager is retried by default. */
const DEFAULT_CONNECT_RETRY_MS = 30_000;

/**
 * Handles a message of the application channel from the job manager: what it returns is the reply
 * to a request. A thrown error goes back as the error reply (or, for a notification, to
 * `onWarning`).
 */
export type TaskManagerApplicationHandler = (
  name: string,
  payload: JsonValue,
) => JsonValue | undefined | Promise<JsonValue | undefined>;

/** Options of {@link TaskManager.start}: the TaskExecutor's (user code first), and the cluster's. */
export interface TaskManagerStartOptions extends TaskExecutorOptions {
  /** The job manager. Default: `jobmanager.rpc.address` and `jobmanager.rpc.port`. */
  readonly jobManager?: HostAndPort;
  /** The application's version; the job manager refuses another one than its own (default `""`). */
  readonly applicationVersion?: string;
  /**
   * How long a refused connection (or, with high availability, a job manager not yet the leader)
   * is retried at start, as the job manager may start later (default 30 s). A TLS failure is not retried. (Registering again after losing the job
   * manager follows `taskmanager.registration.*` instead.)
   */
  readonly connectRetryMs?: number;
  /** Receives the application channel's messages; without it, they are answered with an error. */
  readonly onApplicationMessage?: TaskManagerApplicationHandler;
  /**
   * Called when the job manager shuts this task manager down, after its TaskExecutor closed; what
   * it returns travels back in the shutdown report (`application`).
   */
  readonly onShutdown?: (request: {
    readonly reason: string;
    readonly failed: boolean;
  }) => JsonValue | undefined;
  /**
   * Malformed input from the job manager, a state report that could not be delivered, a failed
   * notification (default: `process.emitWarning`).
   */
  readonly onWarning?: (message: string) => void;
}

/** How and why a task manager ended. */
export interface TaskManagerTermination {
  /**
   * `shutdown`: the job manager ended it; `job-manager-lost`: its connection closed or no heartbeat
   * request came within `heartbeat.timeout`; `closed`: the application called `close()`;
   * `fatal-error`: its TaskExecutor failed fatally (a canceled task's code did not return within
   * `task.cancellation.timeout`), and since that code may still run, the process should exit,
   * as Flink's task manager does.
   */
  readonly reason: "shutdown" | "job-manager-lost" | "closed" | "fatal-error";
  /** True when the job manager said the job failed, or was lost. */
  readonly failed: boolean;
  /** The job manager's reason, why it was lost, or the reason given to `close()`. */
  readonly message: string;
}

/** The part of a NetworkShuffleEnvironment the shutdown report reads (other plugins have none). */
interface WithNetworkBufferPool {
  readonly networkBufferPool?: {
    readonly totalNumberOfMemorySegments: number;
    getNumberOfAvailableMemorySegments(): number;
  };
}

/**
 * A task manager (Flink's TaskManagerRunner with its TaskExecutor's RPC side): it connects to a
 * {@link JobManager}, takes the job manager's configuration with its own keys on top, starts a
 * `TaskExecutor` with the application's code, registers it, and then serves the job manager's
 * `TaskExecutorGateway` calls (deploying and running tasks), reporting task states and answering
 * producer-state questions through the job manager. When it loses the job manager (connection
 * closed, or no heartbeat request for `heartbeat.timeout`) it cancels its tasks and registers
 * again, with backoff, until `taskmanager.registration.timeout`. It ends when the job manager
 * shuts it down, when it could not register again in time, when its TaskExecutor fails fatally,
 * or on {@link TaskManager.close}; {@link TaskManager.terminated} says which. Either way its
 * TaskExecutor is closed (every network buffer back in its pool) first. It never exits the
 * process: that is the application's decision.
 */
export class TaskManager {
  /** The running TaskExecutor. */
  readonly executor: TaskExecutor;
  /** The effective configuration: the job manager's, with this task manager's own keys on top. */
  readonly configuration: Configuration;
  /** Resolves once the task manager ended (its TaskExecutor is closed by then). */
  readonly terminated: Promise<TaskManagerTermination>;

  private connection: JobManagerConnection;
  private address: string;
  /** Where it registers again without high availability: the job manager it started with. */
  private readonly home: HostAndPort;
  private readonly options: TaskManagerStartOptions;
  private jobMaster: RemoteJobMaster;
  /** With high availability: the leadership it registered under, to follow the next leader. */
  private leaderToken: string | undefined;
  private readonly warn: (message: string) => void;
  private reRegistering = false;
  /** Stops registering again (a pause, the search for a leader) when the task manager ends. */
  private readonly registration = new AbortController();
  /** How many times it registered again after losing its job manager. */
  private reRegistrationCount = 0;
  private registeredIndex = -1;
  private heartbeats: HeartbeatMonitor | undefined;
  private ending: TaskManagerTermination | undefined;
  private shuttingDown: Promise<ShutdownReport> | undefined;
  private ended = false;
  private readonly termination = deferred<TaskManagerTermination>();

  private constructor(
    connection: JobManagerConnection,
    executor: TaskExecutor,
    configuration: Configuration,
    jobManager: HostAndPort,
    options: TaskManagerStartOptions,
    warn: (message: string) => void,
    leaderToken: string | undefined,
  ) {
    const jobManagerAddress = formatAddress(jobManager.host, jobManager.port);
    this.connection = connection;
    this.executor = executor;
    this.configuration = configuration;
    this.address = jobManagerAddress;
    this.home = jobManager;
    this.options = options;
    this.warn = warn;
    this.leaderToken = leaderToken;
    this.terminated = this.termination.promise;
    this.jobMaster = this.remoteJobMaster(connection, jobManagerAddress);
    this.serve(connection);
  }

  /** `host:port` of the job manager (with high availability: the leader it registered with). */
  get jobManagerAddress(): string {
    return this.address;
  }

  /**
   * How many times this task manager registered again after it lost its job manager (with high
   * availability, possibly with a newly elected one).
   */
  get reRegistrations(): number {
    return this.reRegistrationCount;
  }

  private remoteJobMaster(connection: JobManagerConnection, address: string): RemoteJobMaster {
    return new RemoteJobMaster(connection, (method, error) => {
      // Once the job manager is gone, its loss is the news; each undelivered report is not.
      if (this.ending === undefined && this.connection === connection) {
        this.warn(
          `could not deliver ${method} to the job manager at ${address}: ${(error as Error)?.message ?? String(error)}`,
        );
      }
    });
  }

  /**
   * Connects to the job manager (retrying a refused connection), says `hello` (versions; the reply
   * is the job manager's configuration), starts the TaskExecutor with the merged configuration
   * and `options`' user code, and registers it. With high availability, a job manager that
   * refuses it as not (yet) the leader is asked again through leader retrieval, with
   * `taskmanager.registration.initial-backoff` doubling, within `connectRetryMs`. Nothing is left
   * running when it fails.
   *
   * @param configuration - this host's own configuration: its keys win over the job manager's.
   *   Unless it sets `taskmanager.host`, the task manager announces the address it reaches the
   *   job manager from, as Flink's task managers do, and binds its data server there.
   * @throws ConfigurationError without a job manager address, or when the job manager refuses
   *   another shuffle plugin; ProtocolError when it refuses another version;
   *   PartitionConnectionError when it cannot be reached; FencingTokenError when no job manager
   *   accepted it as the leader within `connectRetryMs`; the TaskExecutor's start-up errors.
   */
  static async start(
    configuration: Configuration,
    options: TaskManagerStartOptions = {},
  ): Promise<TaskManager> {
    const warn = options.onWarning ?? emitClusterWarning;
    const connect = {
      tls: readControlPlaneTls(configuration),
      maxMessageSize: configuration.get(NettyShuffleEnvironmentOptions.MAX_FRAME_SIZE),
      requestTimeoutMs: configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT),
      onProtocolError: (error: Error) => warn(error.message),
    };
    const retryForMs = options.connectRetryMs ?? DEFAULT_CONNECT_RETRY_MS;
    const deadline = Date.now() + retryForMs;
    let backoffMs = configuration.get(TaskManagerOptions.INITIAL_REGISTRATION_BACKOFF);
    for (;;) {
      // With high availability the leader's published address wins over jobmanager.rpc.address.
      const found =
        options.jobManager === undefined
          ? await connectToJobManagerLeader({
              ...connect,
              configuration,
              timeoutMs: Math.max(1, deadline - Date.now()),
              warn,
              ...(options.loader === undefined ? {} : { loader: options.loader }),
            })
          : undefined;
      const leader = found?.leader;
      const host =
        leader?.host ??
        options.jobManager?.host ??
        configuration.getOptional(JobManagerOptions.ADDRESS);
      if (host === undefined) {
        throw new ConfigurationError(
          `a task manager needs the job manager's address: ${JobManagerOptions.ADDRESS.key} (and ${JobManagerOptions.PORT.key}), or the jobManager option`,
        );
      }
      const port =
        leader?.port ?? options.jobManager?.port ?? configuration.get(JobManagerOptions.PORT);
      const connected =
        found?.connected ?? (await connectToJobManager({ ...connect, host, port, retryForMs }));
      try {
        return await TaskManager.register(connected, configuration, options, warn, {
          host,
          port,
          fencingToken: leader?.fencingToken,
        });
      } catch (error) {
        // Etcd names the next leader a moment before that job manager has confirmed its own
        // election, and it refuses task managers until then: as Flink's RetryingRegistration
        // does with a declined registration, ask retrieval again after a backoff.
        const retried =
          leader !== undefined &&
          isSluiceError(error, ErrorCodes.HA_FENCED) &&
          Date.now() + backoffMs < deadline;
        if (!retried) {
          throw error;
        }
        warn(`${(error as Error).message}: registering again in ${backoffMs} ms`);
        await delay(backoffMs);
        backoffMs = Math.min(
          backoffMs * 2,
          configuration.get(TaskManagerOptions.REGISTRATION_MAX_BACKOFF),
        );
      }
    }
  }

  /**
   * On an open control connection: `hello`, the TaskExecutor's start with the merged
   * configuration, and its registration. Closes the connection and the TaskExecutor when any
   * step fails.
   */
  private static async register(
    connected: ConnectedJobManager,
    configuration: Configuration,
    options: TaskManagerStartOptions,
    warn: (message: string) => void,
    jobManager: HostAndPort & { readonly fencingToken: string | undefined },
  ): Promise<TaskManager> {
    const { connection, localAddress } = connected;
    const { host, port, fencingToken } = jobManager;
    let executor: TaskExecutor | undefined;
    try {
      const hello = await connection.call("hello", {
        version: CONTROL_PLANE_VERSION,
        sluiceVersion: SLUICE_VERSION,
        applicationVersion: options.applicationVersion ?? "",
        pid: process.pid,
        hostname: hostname(),
        ...(fencingToken === undefined ? {} : { fencingToken }),
      });
      const effective = effectiveConfiguration(configuration, hello.configuration, localAddress);
      // The job manager's heartbeat.timeout decides when it is lost, and so TCP's keepalive.
      connected.keepAliveFor(effective.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT));
      let started: TaskManager | undefined;
      executor = await TaskExecutor.start(effective, {
        ...options,
        onFatalError: (error) => started?.fatalError(error),
      });
      const taskManager = new TaskManager(
        connection,
        executor,
        effective,
        { host, port },
        options,
        warn,
        fencingToken,
      );
      const { index } = await connection.call("registerTaskExecutor", registrationOf(executor));
      started = taskManager;
      taskManager.registered(index);
      return taskManager;
    } catch (error) {
      connection.close("the task manager failed to start");
      await executor?.close();
      throw error;
    }
  }

  /** The index the job manager gave this task manager at registration (`task manager 0`). */
  get index(): number {
    return this.registeredIndex;
  }

  /**
   * Sends `name` and `payload` to the job manager's application handler, without a reply;
   * dropped once the connection is gone.
   */
  notifyJobManager(name: string, payload: JsonValue): void {
    this.connection.notify("application", { name, payload });
  }

  /**
   * Calls the job manager's application handler; resolves with what it returned.
   *
   * @throws the handler's error (same code); RemoteTransportError when the connection is gone.
   */
  callJobManager(name: string, payload: JsonValue): Promise<JsonValue> {
    return this.connection.call("application", { name, payload });
  }

  /**
   * Leaves the cluster: closes the connection (the job manager sees this task manager lost, and
   * fails the jobs with tasks here) and the TaskExecutor (its tasks are canceled). Resolves with
   * how it ended; after a shutdown or loss, with that.
   */
  close(reason = "the task manager was closed"): Promise<TaskManagerTermination> {
    if (this.ending === undefined) {
      this.ending = { reason: "closed", failed: false, message: reason };
      this.end();
    }
    return this.terminated;
  }

  /**
   * The TaskExecutor failed fatally: the task manager ends (its connection closes, so the job
   * manager sees it lost) and tells the application, whose process should exit.
   */
  private fatalError(error: Error): void {
    if (this.ending === undefined) {
      this.ending = {
        reason: "fatal-error",
        failed: true,
        message: `the TaskExecutor failed fatally: ${error.message}`,
      };
    }
    this.options.onFatalError?.(error);
    this.end();
  }

  private registered(index: number): void {
    this.registeredIndex = index;
    const timeoutMs = this.configuration.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT);
    const { connection } = this;
    this.heartbeats = new HeartbeatMonitor(timeoutMs, (silentForMs) =>
      this.lost(
        connection,
        `no heartbeat request from the job manager for ${silentForMs} ms (heartbeat.timeout ${timeoutMs} ms)`,
        false,
      ),
    );
    void connection.closed.then((why) => this.lost(connection, why, true));
  }

  /** Answers the job manager's requests on `connection`. */
  private serve(connection: JobManagerConnection): void {
    connection.handle("heartbeat", () => {
      this.heartbeats?.received();
      return {};
    });
    connection.handle("shutdown", ({ reason, failed }) => {
      this.shuttingDown ??= this.shutdown(reason, failed);
      return this.shuttingDown;
    });
    // With slot threads the tasks' metrics are in the slots' registries: the TaskExecutor asks them.
    connection.handle("queryMetrics", async () => ({
      metrics: toRemoteMetricDumps(await this.executor.dumpMetrics()),
    }));
    connection.handle("application", async ({ name, payload }) => {
      const handler = this.options.onApplicationMessage;
      if (handler === undefined) {
        throw new IllegalStateError(
          `the task manager's application handles no messages (got ${name} from the job manager)`,
        );
      }
      return (await handler(name, payload)) ?? null;
    });
    serveGateway(
      { handle: (method, handler) => connection.handleUnchecked(method, handler) },
      TaskExecutorGatewayMethods,
      () => ({ executor: this.executor, jobMaster: this.jobMaster }),
    );
  }

  /**
   * The job manager ends this task manager: close the TaskExecutor, after waiting (when the job
   * did not fail) until consumers released this worker's partitions, and report whether every
   * network buffer came back. It ends once the job manager closed the connection.
   */
  private async shutdown(reason: string, failed: boolean): Promise<ShutdownReport> {
    this.ending ??= { reason: "shutdown", failed, message: reason };
    this.heartbeats?.stop();
    const environment: ShuffleEnvironment = this.executor.shuffleEnvironment;
    let unreleasedPartitions = 0;
    if (!failed) {
      // A remote consumer releases a pipelined partition with a message that may still be in
      // flight when the shutdown arrives.
      const deadline = Date.now() + RELEASE_WAIT_MS;
      while (
        environment.getPartitionsOccupyingLocalResources().length > 0 &&
        Date.now() < deadline
      ) {
        await delay(10);
      }
      unreleasedPartitions = environment.getPartitionsOccupyingLocalResources().length;
    }
    await this.executor.close();
    const pool = (environment as WithNetworkBufferPool).networkBufferPool;
    const application = this.options.onShutdown?.({ reason, failed });
    // The job manager closes the connection once it has the report; one that vanishes instead
    // must not keep this task manager waiting.
    setTimeout(() => this.end(), CLOSE_DEADLINE_MS).unref();
    return {
      networkBuffers:
        pool === undefined
          ? null
          : {
              available: pool.getNumberOfAvailableMemorySegments(),
              total: pool.totalNumberOfMemorySegments,
            },
      unreleasedPartitions,
      peakRssBytes: process.resourceUsage().maxRSS * 1024,
      ...(application === undefined ? {} : { application }),
    };
  }

  /**
   * The connection closed or heartbeats stopped: the task manager registers again (Flink's
   * TaskExecutor on a lost job manager), with or without high availability.
   */
  private lost(connection: JobManagerConnection, why: string, closed: boolean): void {
    if (connection !== this.connection || this.reRegistering) return;
    // Shut down (or closing): the job manager closed the connection once it had the report.
    if (this.ending !== undefined) this.end();
    else void this.registerAgain(why, closed);
  }

  /**
   * Flink's TaskExecutor on a lost job manager: the tasks are canceled and their partitions
   * released (the job manager redeploys its jobs from their latest checkpoints), and the
   * TaskExecutor, with its network memory and data server, registers again, with backoff
   * (`taskmanager.registration.initial-backoff`, doubling up to `.max-backoff`), until
   * `taskmanager.registration.timeout`: with the job manager it started with, or with high
   * availability with the leader that retrieval names (not the lost leadership when its
   * connection closed: that leader is gone or deposed). It ends as `job-manager-lost` when the
   * timeout passes, or at once when a job manager refuses it for good (another version or
   * plugin).
   */
  private async registerAgain(why: string, closed: boolean): Promise<void> {
    this.reRegistering = true;
    const lostAddress = this.address;
    const lostToken = closed ? this.leaderToken : undefined;
    this.heartbeats?.stop();
    this.connection.terminate();
    const c = this.configuration;
    const timeoutMs = c.get(TaskManagerOptions.REGISTRATION_TIMEOUT);
    const maxBackoffMs = c.get(TaskManagerOptions.REGISTRATION_MAX_BACKOFF);
    let backoffMs = c.get(TaskManagerOptions.INITIAL_REGISTRATION_BACKOFF);
    this.warn(
      `lost the job manager at ${lostAddress} (${why}): canceling its tasks, releasing their partitions and registering again${this.leaderToken === undefined ? "" : " with the leader that high availability names"} for up to ${timeoutMs} ms (${TaskManagerOptions.REGISTRATION_TIMEOUT.key})`,
    );
    await this.cancelAllTasks();
    const deadline = Date.now() + timeoutMs;
    let attempts = 0;
    let failure: unknown;
    while (this.ending === undefined && Date.now() < deadline) {
      attempts++;
      try {
        await this.registerOnce(lostToken, Math.min(deadline - Date.now(), maxBackoffMs));
        this.reRegistrationCount++;
        this.reRegistering = false;
        return;
      } catch (error) {
        failure = error;
        if (isFinalRefusal(error)) break;
      }
      const pauseMs = Math.min(backoffMs, deadline - Date.now());
      backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
      if (pauseMs > 0) {
        await delay(pauseMs, undefined, { signal: this.registration.signal }).catch(() => {});
      }
    }
    this.reRegistering = false;
    const cause = (failure as Error | undefined)?.message ?? String(failure);
    this.ending ??= {
      reason: "job-manager-lost",
      failed: true,
      message: isFinalRefusal(failure)
        ? `${why}; the job manager refused it: ${cause}`
        : `${why}; it could not register again within ${timeoutMs} ms (${TaskManagerOptions.REGISTRATION_TIMEOUT.key}, ${attempts} attempts): ${cause}`,
    };
    this.end();
  }

  /**
   * One attempt to register again, its connection and answers bounded by `attemptMs`: connect
   * (with high availability, to the leader retrieval names other than `lostToken`), `hello`,
   * `registerTaskExecutor`; from then on the new connection is the task manager's.
   */
  private async registerOnce(lostToken: string | undefined, attemptMs: number): Promise<void> {
    const c = this.configuration;
    const connect = {
      tls: readControlPlaneTls(c),
      maxMessageSize: c.get(NettyShuffleEnvironmentOptions.MAX_FRAME_SIZE),
      requestTimeoutMs: Math.min(c.get(HeartbeatManagerOptions.HEARTBEAT_TIMEOUT), attemptMs),
      onProtocolError: (error: Error) => this.warn(error.message),
    };
    const found = await connectToJobManagerLeader({
      ...connect,
      configuration: c,
      timeoutMs: attemptMs,
      warn: this.warn,
      ...(this.options.loader === undefined ? {} : { loader: this.options.loader }),
      ...(lostToken === undefined ? {} : { lostToken }),
      signal: this.registration.signal,
    });
    const target = found?.leader ?? this.home;
    const { connection } =
      found?.connected ?? (await connectToJobManager({ ...connect, ...target, retryForMs: 0 }));
    try {
      if (this.ending !== undefined) throw new IllegalStateError("the task manager is closing");
      await connection.call("hello", {
        version: CONTROL_PLANE_VERSION,
        sluiceVersion: SLUICE_VERSION,
        applicationVersion: this.options.applicationVersion ?? "",
        pid: process.pid,
        hostname: hostname(),
        ...(found === undefined ? {} : { fencingToken: found.leader.fencingToken }),
      });
      const address = formatAddress(target.host, target.port);
      this.connection = connection;
      this.address = address;
      this.leaderToken = found?.leader.fencingToken;
      this.jobMaster = this.remoteJobMaster(connection, address);
      this.serve(connection);
      const { index } = await connection.call(
        "registerTaskExecutor",
        registrationOf(this.executor),
      );
      if (this.ending !== undefined) throw new IllegalStateError("the task manager is closing");
      this.registered(index);
    } catch (error) {
      connection.close("the task manager could not register again");
      throw error;
    }
  }

  /** Cancels every task and releases every partition left (bounded by the cancellation timeout). */
  private async cancelAllTasks(): Promise<void> {
    for (const task of this.executor.runningTasks) {
      await this.executor.cancelTask(task.executionAttemptId).catch(() => undefined);
    }
    const deadline = Date.now() + CLOSE_DEADLINE_MS;
    while (this.executor.runningTasks.length > 0 && Date.now() < deadline) await delay(10);
    const environment = this.executor.shuffleEnvironment;
    const partitions = environment.getPartitionsOccupyingLocalResources();
    if (partitions.length > 0) environment.releasePartitionsLocally(partitions);
  }

  /** Stops heartbeats, closes the connection and the TaskExecutor (bounded), then resolves. */
  private end(): void {
    if (this.ended) return;
    this.ended = true;
    this.registration.abort(new IllegalStateError("the task manager ended"));
    this.heartbeats?.stop();
    this.connection.close(this.ending?.message ?? "the task manager ended");
    const closing = this.executor.close();
    void Promise.race([closing, delay(CLOSE_DEADLINE_MS, undefined, { ref: false })]).then(() =>
      this.termination.resolve(this.ending as TaskManagerTermination),
    );
  }
}

/**
 * Whether a job manager refused this task manager for good (Flink's registration rejection): it
 * runs another control plane, release, application version or shuffle plugin, which registering
 * again cannot change, or it has as many task managers as its application accepts (a
 * replacement took this one's place). Anything else (no answer, a standby, its former
 * registration not known lost yet) is tried again.
 */
function isFinalRefusal(error: unknown): boolean {
  return (
    isSluiceError(error, ErrorCodes.PROTOCOL) ||
    isSluiceError(error, ErrorCodes.CONFIG) ||
    isSluiceError(error, ErrorCodes.LIMIT_EXCEEDED)
  );
}

function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

/**
 * The job manager's configuration with this host's own keys on top. Unless this task manager
 * sets them, it announces the address it reaches the job manager from (as Flink's task managers
 * do) and binds its data server to that address.
 */
function effectiveConfiguration(
  own: Configuration,
  fromJobManager: Readonly<Record<string, unknown>>,
  localAddress: string,
): Configuration {
  // A copy of this host's own: the TaskExecutor started with it reports the unknown keys loaded
  // here (not the job manager's, which its own process reports) once it loaded the plugins.
  const configuration = own.clone();
  for (const [key, value] of Object.entries(fromJobManager)) {
    // A null in the job manager's JSON sets nothing (set() refuses it).
    if (!HOST_LOCAL_KEYS.has(key) && !own.has(key) && value !== null) {
      configuration.set(key, value);
    }
  }
  if (!own.contains(TaskManagerOptions.HOST) && localAddress !== "") {
    configuration.set(TaskManagerOptions.HOST, localAddress);
  }
  if (!own.contains(NettyShuffleEnvironmentOptions.DATA_BIND_HOST)) {
    configuration.set(
      NettyShuffleEnvironmentOptions.DATA_BIND_HOST,
      configuration.get(TaskManagerOptions.HOST),
    );
  }
  return configuration;
}

/** What a task manager tells the job manager about its TaskExecutor when it registers. */
function registrationOf(executor: TaskExecutor) {
  return {
    resourceId: executor.resourceId.toString(),
    host: executor.location.host,
    dataPort: executor.location.dataPort,
    plugin: shufflePluginIdentity(executor.plugin),
    networkMemory: executor.networkMemory.bytes,
    numberOfSlots: executor.numberOfSlots,
    metricEndpoints: executor.metricGroup.registry.endpoints(),
  };
}
