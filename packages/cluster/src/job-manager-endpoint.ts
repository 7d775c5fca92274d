import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import {
  ConfigurationError,
  IllegalStateError,
  type JobID,
  LimitExceededError,
  ProtocolError,
  RemoteTransportError,
  ResourceID,
  TimeoutError,
} from "@sluice/core";
import { keepAliveDelayFor, onTlsClientError, type TlsSettings } from "@sluice/network/plugin";
import { type ListenTarget, listenError } from "@sluice/runtime/plugin";
import { FencingTokenError, JobManagerOptions, type JsonValue } from "@sluice/runtime-api";
import { type WebSocket, WebSocketServer } from "ws";
import {
  CONTROL_PLANE_PATH,
  CONTROL_PLANE_VERSION,
  controlPlaneUrl,
  JobManagerMethods,
  SLUICE_VERSION,
  TaskManagerMethods,
} from "./control-plane-messages.js";
import { pinViolation, serverTlsOptions } from "./control-plane-tls.js";
import { serveGateway } from "./gateway-forwarding.js";
import { HeartbeatMonitor } from "./heartbeat-monitor.js";
import { JobMasterGatewayMethods } from "./job-master-gateway-methods.js";
import { RegisteredTaskManager, type TaskManagerConnection } from "./registered-task-manager.js";
import { RpcPeer } from "./rpc-peer.js";
import { describeShufflePlugin, type ShufflePluginIdentity } from "./shuffle-plugin-identity.js";

/** What the job manager learns from its task managers. */
export interface JobManagerEndpointEvents {
  /** A task manager registered (its TaskExecutor runs and loaded the expected plugin). */
  onRegistered(taskManager: RegisteredTaskManager): void;
  /**
   * A registered task manager is gone: its connection closed, or it answered no heartbeat within
   * `heartbeat.timeout`. The error names it and its address. Called once per task manager.
   */
  onLost(taskManager: RegisteredTaskManager, cause: Error): void;
  /** A message on the application channel; what it returns is a request's reply. */
  onApplicationMessage(
    taskManager: RegisteredTaskManager,
    name: string,
    payload: JsonValue,
  ): JsonValue | undefined | Promise<JsonValue | undefined>;
  /** Malformed input from a peer, or a refused task manager (the peer got an error reply). */
  onWarning(message: string): void;
}

/** A task manager the job manager refused, and why (the error it replied with). */
export interface RefusedTaskManager {
  /** Who it was: its pid, host and address, as far as it told before it was refused. */
  readonly label: string;
  /** The reply's error: a plugin or version mismatch, too many task managers, ... */
  readonly reason: Error;
}

/** How many refusals the endpoint remembers (the latest ones): peers must not grow its memory. */
const MAX_REMEMBERED_REFUSALS = 16;

/** The control plane's limits (see `JobManagerOptions`), each with the key that set it. */
export interface ControlPlaneLimits {
  /** `jobmanager.rpc.max-message-size`: the largest message of a registered task manager. */
  readonly maxMessageSize: number;
  /** `jobmanager.rpc.max-unregistered-message-size`: the largest one before it registered. */
  readonly maxUnregisteredMessageSize: number;
  /** `jobmanager.rpc.max-connections`. */
  readonly maxConnections: number;
  /** `jobmanager.rpc.registration-timeout`, in ms. */
  readonly registrationTimeoutMs: number;
  /** `jobmanager.rpc.max-outbound-bytes-per-connection`. */
  readonly maxOutboundBytes: number;
  /** `jobmanager.rpc.max-concurrent-requests-per-connection`. */
  readonly maxConcurrentRequests: number;
}

/** Options of {@link JobManagerEndpoint.listen}. */
export interface JobManagerEndpointOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The keys (or options) that chose `host` and `port`, named when listening fails. */
  readonly addressKeys: Pick<ListenTarget, "hostKey" | "portKey">;
  /** Mutual TLS with the internal certificates, or plaintext. */
  readonly tls: TlsSettings | undefined;
  /** `jobmanager.deployment.timeout`: how long a deployed task may take to report RUNNING. */
  readonly deploymentTimeoutMs: number;
  /** What one peer may make the job manager hold, and for how long. */
  readonly limits: ControlPlaneLimits;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  /** The application's version: task managers must run the same. */
  readonly applicationVersion: string;
  /** The plugin task managers must have loaded. */
  readonly plugin: ShufflePluginIdentity;
  /** How many task managers may register; more are refused. */
  readonly maxTaskManagers: number;
  /** The configuration task managers get at `hello`. */
  readonly taskManagerConfiguration: Readonly<Record<string, JsonValue>>;
  /**
   * With high availability: the fencing token of this job manager's current leadership, or
   * `undefined` while it does not lead (a standby); task managers are refused at `hello` then.
   * Without it (`high-availability.type: none`) every task manager is welcome.
   */
  readonly leadership?: () => string | undefined;
  readonly events: JobManagerEndpointEvents;
}

/**
 * The job manager's control plane (Flink's JobMaster + ResourceManager RPC endpoints): a
 * WebSocket server that task managers connect to. It answers `hello` with the configuration after
 * checking versions, registers TaskExecutors that loaded the job manager's shuffle plugin,
 * requests a heartbeat from each every `heartbeat.interval` and reports a task manager lost when
 * its connection closes or it stays silent for `heartbeat.timeout`. It routes the tasks' gateway
 * calls to the `JobExecution` of their job, and application messages to the application.
 */
export class JobManagerEndpoint {
  /** The registered task managers, in registration order (lost ones included). */
  readonly taskManagers: RegisteredTaskManager[] = [];
  /** The latest task managers it refused (at most 16), oldest first. */
  readonly refused: RefusedTaskManager[] = [];
  /** `ws://host:port` or `wss://host:port`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;

  private readonly options: JobManagerEndpointOptions;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly monitors = new Set<HeartbeatMonitor>();
  /** Every accepted TCP connection, upgraded or not: what `jobmanager.rpc.max-connections` counts. */
  private readonly connections = new Set<Socket>();
  /** `address:port` of the connections whose task manager registered. */
  private readonly registeredAddresses = new Set<string>();
  /** Connections refused for the connection cap since the last warning about it. */
  private refusedConnections = 0;
  /** Registrations so far: each task manager's index. */
  private registrations = 0;
  private lastCapWarning = 0;
  private closing: Promise<void> | undefined;

  private constructor(options: JobManagerEndpointOptions, server: Server, wss: WebSocketServer) {
    this.options = options;
    this.server = server;
    this.wss = wss;
    const address = server.address() as AddressInfo;
    this.host = options.host;
    this.port = address.port;
    this.url = controlPlaneUrl(options.host, this.port, options.tls !== undefined);
  }

  /**
   * Starts listening.
   *
   * @throws ConfigurationError naming the address and the key that chose it when it cannot
   *   listen there (the port is in use, ...); nothing is left listening.
   */
  static listen(options: JobManagerEndpointOptions): Promise<JobManagerEndpoint> {
    const refuse = (_request: IncomingMessage, response: ServerResponse) => {
      response.writeHead(426, { "Content-Type": "text/plain" });
      response.end("the Sluice job manager speaks WebSocket only\n");
    };
    const tls = options.tls;
    let server: Server;
    if (tls === undefined) {
      server = createServer(refuse);
    } else {
      const https = createHttpsServer(serverTlsOptions(tls), refuse);
      https.on("secureConnection", (socket: TLSSocket) => {
        const violation = pinViolation(tls, socket);
        if (violation === undefined) return;
        options.events.onWarning(
          `refused a control connection from ${socket.remoteAddress}: ${violation}`,
        );
        socket.destroy();
      });
      // A client without a certificate the internal CA signed never gets past the handshake.
      onTlsClientError(https, (error, socket) => {
        options.events.onWarning(
          `refused a control connection from ${socket.remoteAddress ?? "a peer that hung up"}: TLS handshake failed (${error.message})`,
        );
        socket.destroy();
      });
      server = https;
    }
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        const mapped = listenError(error, {
          what: "the job manager's control plane",
          host: options.host,
          port: options.port,
          ...options.addressKeys,
        });
        reject(
          mapped instanceof ConfigurationError
            ? mapped
            : new ConfigurationError(
                `the job manager's control plane cannot listen on ${options.host}:${options.port} (${options.addressKeys.portKey}): ${error.message}`,
                { cause: error },
              ),
        );
      };
      server.once("error", onError);
      server.listen(options.port, options.host, () => {
        server.off("error", onError);
        // Created once listening: a WebSocketServer re-emits its HTTP server's errors as its own,
        // so one made before would turn a refused listen into an uncaught 'error' event.
        const wss = new WebSocketServer({
          server,
          path: CONTROL_PLANE_PATH,
          maxPayload: options.limits.maxMessageSize,
        });
        // An error of the listening server later (accept failures) leaves it listening.
        wss.on("error", (error) =>
          options.events.onWarning(`the job manager's control plane: ${error.message}`),
        );
        const endpoint = new JobManagerEndpoint(options, server, wss);
        server.on("connection", (socket: Socket) => endpoint.admit(socket));
        wss.on("connection", (socket, request) => endpoint.accept(socket, request));
        resolve(endpoint);
      });
    });
  }

  /**
   * A new leadership of the job manager begins: the task managers lost before (a deposed job
   * manager dropped every connection) are forgotten, so that they register again with their
   * resource ids; the jobs that told them apart were suspended with the old leadership.
   */
  forgetLostTaskManagers(): void {
    const connected = this.taskManagers.filter((taskManager) => taskManager.connected);
    this.taskManagers.splice(0, this.taskManagers.length, ...connected);
  }

  /** Stops heartbeats, drops every connection and stops listening. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      for (const timer of this.timers) clearInterval(timer);
      for (const monitor of this.monitors) monitor.stop();
      for (const taskManager of this.taskManagers) taskManager.markEnded();
      for (const client of this.wss.clients) client.terminate();
      this.wss.close(() => this.server.close(() => resolve()));
      this.server.closeAllConnections();
      for (const connection of this.connections) connection.destroy();
    });
    return this.closing;
  }

  /**
   * Counts a new TCP connection against `jobmanager.rpc.max-connections` and gives it
   * `jobmanager.rpc.registration-timeout` to register a TaskExecutor: a half-open handshake, a
   * silent socket or a peer that never registers is closed then.
   */
  private admit(socket: Socket): void {
    const { limits, events } = this.options;
    const address = `${socket.remoteAddress}:${socket.remotePort}`;
    if (this.connections.size >= limits.maxConnections) {
      socket.destroy();
      this.refusedConnections++;
      // One warning a second at most: a flood of connections must not become a flood of lines.
      const now = Date.now();
      if (now - this.lastCapWarning >= 1_000) {
        this.lastCapWarning = now;
        events.onWarning(
          `refused ${this.refusedConnections} control connection(s), the latest from ${address}: the job manager already has ${this.connections.size} open, as many as ${JobManagerOptions.MAX_CONNECTIONS.key} (${limits.maxConnections}) allows`,
        );
        this.refusedConnections = 0;
      }
      return;
    }
    this.connections.add(socket);
    // A peer that vanished without a FIN is noticed by TCP too, but never before the heartbeat
    // would: a cut the heartbeats ride out must not end the connection under them.
    socket.setKeepAlive(true, keepAliveDelayFor(this.options.heartbeatTimeoutMs));
    const timer = setTimeout(() => {
      if (socket.destroyed || this.registeredAddresses.has(address)) return;
      events.onWarning(
        `closed the control connection from ${address}: it registered no TaskExecutor within ${limits.registrationTimeoutMs} ms (${JobManagerOptions.REGISTRATION_TIMEOUT.key})`,
      );
      socket.destroy();
    }, limits.registrationTimeoutMs);
    timer.unref();
    socket.once("close", () => {
      clearTimeout(timer);
      this.connections.delete(socket);
    });
  }

  private accept(socket: WebSocket, request: IncomingMessage): void {
    const remoteAddress = `${request.socket.remoteAddress}:${request.socket.remotePort}`;
    const { events, limits } = this.options;
    const peer: TaskManagerConnection = new RpcPeer({
      socket,
      local: JobManagerMethods,
      remote: TaskManagerMethods,
      label: `a task manager connecting from ${remoteAddress}`,
      requestTimeoutMs: this.options.heartbeatTimeoutMs,
      onProtocolError: (error) => events.onWarning(error.message),
      maxMessageSize: () =>
        registered === undefined
          ? {
              value: limits.maxUnregisteredMessageSize,
              key: JobManagerOptions.MAX_UNREGISTERED_MESSAGE_SIZE.key,
            }
          : { value: limits.maxMessageSize, key: JobManagerOptions.MAX_MESSAGE_SIZE.key },
      maxOutboundBytes: {
        value: limits.maxOutboundBytes,
        key: JobManagerOptions.MAX_OUTBOUND_BYTES_PER_CONNECTION.key,
      },
      maxConcurrentRequests: {
        value: limits.maxConcurrentRequests,
        key: JobManagerOptions.MAX_CONCURRENT_REQUESTS_PER_CONNECTION.key,
      },
    });
    let hello: { pid: number; hostname: string } | undefined;
    let registered: RegisteredTaskManager | undefined;
    const refuse = (error: Error): never => {
      events.onWarning(`refused ${peer.label}: ${error.message}`);
      this.refused.push({ label: peer.label, reason: error });
      if (this.refused.length > MAX_REMEMBERED_REFUSALS) this.refused.shift();
      // The error reply goes out first; then the connection is dropped.
      setImmediate(() => peer.close("refused"));
      throw error;
    };
    const requireRegistered = (): RegisteredTaskManager => {
      if (registered !== undefined) return registered;
      throw new IllegalStateError(`${peer.label} has not registered its TaskExecutor`);
    };

    peer.handle("hello", (params) => {
      const { applicationVersion } = this.options;
      if (
        params.version !== CONTROL_PLANE_VERSION ||
        params.sluiceVersion !== SLUICE_VERSION ||
        params.applicationVersion !== applicationVersion
      ) {
        refuse(
          new ProtocolError(
            `incompatible versions: the task manager speaks control plane version ${params.version} (Sluice ${params.sluiceVersion}, application ${describeVersion(params.applicationVersion)}), the job manager version ${CONTROL_PLANE_VERSION} (Sluice ${SLUICE_VERSION}, application ${describeVersion(applicationVersion)}); run the same release everywhere`,
          ),
        );
      }
      const { leadership } = this.options;
      if (leadership !== undefined) {
        const token = leadership();
        if (token === undefined || (params.fencingToken ?? token) !== token) {
          refuse(
            new FencingTokenError(
              token === undefined
                ? `the job manager at ${this.url} is not the leader (a standby); follow the leader through the high-availability services`
                : `the task manager looked up leadership ${params.fencingToken}, but the job manager at ${this.url} holds leadership ${token}`,
            ),
          );
        }
      }
      hello = { pid: params.pid, hostname: params.hostname };
      peer.label = `the task manager with pid ${params.pid} on ${params.hostname} (${remoteAddress})`;
      return { configuration: { ...this.options.taskManagerConfiguration } };
    });

    peer.handle("registerTaskExecutor", (params) => {
      if (hello === undefined) {
        refuse(new IllegalStateError(`${peer.label} registered before hello`));
      }
      if (registered !== undefined) {
        refuse(new IllegalStateError(`${registered.label} registered twice`));
      }
      const expected = this.options.plugin;
      if (
        params.plugin.reference !== expected.reference ||
        params.plugin.package !== expected.package
      ) {
        refuse(
          new ConfigurationError(
            `${peer.label} loaded the shuffle plugin ${describeShufflePlugin(params.plugin)}, but the job manager runs ${describeShufflePlugin(expected)}; every process of a job must load the same plugin (shuffle-service-factory.class)`,
          ),
        );
      }
      const { maxTaskManagers } = this.options;
      // Lost task managers do not count: a replacement for one is welcome.
      if (this.taskManagers.filter((tm) => tm.connected).length >= maxTaskManagers) {
        // A limit the application set: a task manager refused for it does not try again.
        refuse(
          new LimitExceededError(
            `the job manager already has the ${maxTaskManagers} task managers it accepts`,
          ),
        );
      }
      let resourceId: ResourceID;
      try {
        resourceId = ResourceID.fromHex(params.resourceId);
      } catch (error) {
        return refuse(
          new ProtocolError(
            `${peer.label} sent a malformed resourceId: ${(error as Error).message}`,
          ),
        );
      }
      // A task manager that lost this job manager registers again with its resource id: it is
      // a new registration (jobs never use a lost one again), welcome once the old one is known
      // lost. Until then the id names a live task manager, and only that one.
      const holder = this.taskManagers.find(
        (tm) => tm.location.resourceId.equals(resourceId) && tm.connected,
      );
      if (holder !== undefined) {
        refuse(
          new IllegalStateError(
            `${peer.label} registered with resource id ${resourceId}, which ${holder.labelWithAddress} holds; a resource id names one task manager (a task manager registering again is welcome once its former registration is lost)`,
          ),
        );
      }
      const info = hello as { pid: number; hostname: string };
      const taskManager = new RegisteredTaskManager(
        {
          index: this.registrations++,
          pid: info.pid,
          hostname: info.hostname,
          remoteAddress,
          location: { resourceId, host: params.host, dataPort: params.dataPort },
          metricEndpoints: params.metricEndpoints ?? [],
          numberOfSlots: params.numberOfSlots,
          ...(params.networkMemory === undefined ? {} : { networkMemory: params.networkMemory }),
        },
        peer,
        (method, error) =>
          events.onWarning(
            `${method} to ${peer.label} failed: ${(error as Error)?.message ?? String(error)}`,
          ),
        events.onWarning,
        this.options.deploymentTimeoutMs,
      );
      registered = taskManager;
      this.registeredAddresses.add(remoteAddress);
      peer.label = taskManager.labelWithAddress;
      this.taskManagers.push(taskManager);
      this.startHeartbeats(taskManager, peer);
      events.onRegistered(taskManager);
      return { index: taskManager.index };
    });

    peer.handle("application", async ({ name, payload }) => {
      const taskManager = requireRegistered();
      return (await events.onApplicationMessage(taskManager, name, payload)) ?? null;
    });

    serveGateway(
      { handle: (method, handler) => peer.handleUnchecked(method, handler) },
      JobMasterGatewayMethods,
      () => {
        const taskManager = requireRegistered();
        const jobMasterOf = (jobId: JobID) => {
          const jobMaster = taskManager.jobMasterOf(jobId);
          if (jobMaster !== undefined) return jobMaster;
          throw new IllegalStateError(
            `${taskManager.label} called about job ${jobId}, of which it runs no task`,
          );
        };
        return {
          jobMasterOf,
          reporterFor: (jobId, attemptId, what) => {
            try {
              taskManager.checkReporter(jobId, attemptId, what);
            } catch (error) {
              events.onWarning(`refused a report: ${(error as Error).message}`);
              throw error;
            }
            return jobMasterOf(jobId);
          },
          attemptReported: (attemptId, state) => taskManager.attemptReported(attemptId, state),
        };
      },
    );

    void peer.closed.then((why) => {
      this.registeredAddresses.delete(remoteAddress);
      const taskManager = registered;
      if (taskManager === undefined || taskManager.endedOnPurpose) return;
      taskManager.markEnded();
      events.onLost(
        taskManager,
        new RemoteTransportError(`${taskManager.labelWithAddress} was lost: ${why}`),
      );
    });
  }

  /** Requests a heartbeat every interval; silence for the timeout loses the task manager. */
  private startHeartbeats(taskManager: RegisteredTaskManager, peer: TaskManagerConnection): void {
    const { heartbeatIntervalMs, heartbeatTimeoutMs, events } = this.options;
    const monitor = new HeartbeatMonitor(heartbeatTimeoutMs, (silentForMs) => {
      clearInterval(timer);
      if (taskManager.endedOnPurpose) return;
      taskManager.markEnded();
      peer.terminate();
      events.onLost(
        taskManager,
        new TimeoutError(
          `${taskManager.labelWithAddress} was lost: no heartbeat for ${silentForMs} ms (heartbeat.timeout ${heartbeatTimeoutMs} ms)`,
        ),
      );
    });
    const timer = setInterval(() => {
      peer.call("heartbeat", {}).then(
        () => monitor.received(),
        // A missed heartbeat is what the monitor counts; the loss is reported there.
        () => {},
      );
    }, heartbeatIntervalMs);
    timer.unref();
    this.timers.add(timer);
    this.monitors.add(monitor);
    void peer.closed.then(() => {
      clearInterval(timer);
      monitor.stop();
      this.timers.delete(timer);
      this.monitors.delete(monitor);
    });
  }
}

function describeVersion(version: string): string {
  return version === "" ? "unversioned" : version;
}
