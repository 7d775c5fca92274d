import { createServer, type IncomingMessage, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { TLSSocket } from "node:tls";
import {
  ConfigurationError,
  IllegalStateError,
  IntermediateDataSetID,
  JobID,
  ProtocolError,
  RemoteTransportError,
  ResourceID,
  ResultPartitionID,
  TimeoutError,
} from "@sluice/core";
import type { TlsSettings } from "@sluice/network";
import {
  type SerializedThrowable,
  type TaskExecutionState,
  taskExecutionStateFromJSON,
} from "@sluice/runtime";
import type { JsonValue } from "@sluice/runtime-api";
import { WebSocketServer } from "ws";
import type { PluginIdentity } from "../shuffle-plugin.js";
import type { TaskProgress } from "../task-progress.js";
import {
  CONTROL_PLANE_PATH,
  CONTROL_PLANE_VERSION,
  controlPlaneUrl,
  JobManagerMethods,
  TaskManagerMethods,
} from "./control-plane-messages.js";
import { pinViolation, serverTlsOptions } from "./control-plane-tls.js";
import { HeartbeatMonitor } from "./heartbeat-monitor.js";
import { RegisteredTaskManager, type TaskManagerConnection } from "./registered-task-manager.js";
import { RpcPeer } from "./rpc-peer.js";

/** What the job manager learns from its task managers. */
export interface JobManagerEndpointEvents {
  /** A task manager registered (its TaskExecutor runs and loaded the expected plugin). */
  onRegistered(taskManager: RegisteredTaskManager): void;
  /**
   * A registered task manager is gone: its connection closed, or it sent no heartbeat within
   * `heartbeat.timeout`. The error names it and its address. Called once per task manager.
   */
  onLost(taskManager: RegisteredTaskManager, cause: Error): void;
  /** A task manager's live counters and resident set size. */
  onProgress(
    taskManager: RegisteredTaskManager,
    tasks: readonly TaskProgress[],
    rssMb: number,
  ): void;
  /** A task's final counters, reported with its terminal state. */
  onFinalProgress(taskManager: RegisteredTaskManager, progress: TaskProgress): void;
  /** Malformed input from a peer, or a refused task manager (the peer got an error reply). */
  onWarning(message: string): void;
}

/** Options of {@link JobManagerEndpoint.listen}. */
export interface JobManagerEndpointOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** Mutual TLS with the internal certificates, or plaintext. */
  readonly tls: TlsSettings | undefined;
  /** Largest control-plane message accepted. */
  readonly maxMessageSize: number;
  readonly heartbeatIntervalMs: number;
  readonly heartbeatTimeoutMs: number;
  /** The demo's version: task managers must run the same. */
  readonly appVersion: string;
  /** The plugin task managers must have loaded. */
  readonly plugin: PluginIdentity;
  /** How many task managers the job needs; more are refused. */
  readonly expectedTaskManagers: number;
  /** The configuration task managers get at `hello`. */
  readonly taskManagerConfiguration: Readonly<Record<string, JsonValue>>;
  readonly events: JobManagerEndpointEvents;
}

/**
 * The job manager's control plane (Flink's JobMaster + ResourceManager RPC endpoints, reduced to
 * one job): a WebSocket server that task managers connect to. It answers `hello` with the
 * configuration after checking versions, registers TaskExecutors that loaded the job manager's
 * shuffle plugin, requests heartbeats from each every `heartbeat.interval` and reports a task
 * manager lost when its connection closes or it stays silent for `heartbeat.timeout`. It routes
 * the tasks' state reports and producer-state questions to the job's `JobExecution`.
 */
export class JobManagerEndpoint {
  /** The registered task managers, in registration order. */
  readonly taskManagers: RegisteredTaskManager[] = [];
  /** `ws://host:port` or `wss://host:port`. */
  readonly url: string;
  readonly host: string;
  readonly port: number;

  private readonly options: JobManagerEndpointOptions;
  private readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly monitors = new Set<HeartbeatMonitor>();
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

  /** Starts listening. */
  static listen(options: JobManagerEndpointOptions): Promise<JobManagerEndpoint> {
    const refuse = (_request: IncomingMessage, response: import("node:http").ServerResponse) => {
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
      https.on("tlsClientError", (error, socket) => {
        options.events.onWarning(
          `refused a control connection from ${socket.remoteAddress ?? "a peer that hung up"}: TLS handshake failed (${error.message})`,
        );
        socket.destroy();
      });
      server = https;
    }
    const wss = new WebSocketServer({
      server,
      path: CONTROL_PLANE_PATH,
      maxPayload: options.maxMessageSize,
    });
    return new Promise((resolve, reject) => {
      const onError = (error: Error) => {
        wss.close();
        reject(
          new ConfigurationError(
            `the job manager cannot listen on ${options.host}:${options.port}: ${error.message}`,
            { cause: error },
          ),
        );
      };
      server.once("error", onError);
      server.listen(options.port, options.host, () => {
        server.off("error", onError);
        const endpoint = new JobManagerEndpoint(options, server, wss);
        wss.on("connection", (socket, request) => endpoint.accept(socket, request));
        resolve(endpoint);
      });
    });
  }

  /** Stops heartbeats, drops every connection and stops listening. Idempotent. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      for (const timer of this.timers) clearInterval(timer);
      for (const monitor of this.monitors) monitor.stop();
      for (const taskManager of this.taskManagers) taskManager.shutdownRequested = true;
      for (const client of this.wss.clients) client.terminate();
      this.wss.close(() => this.server.close(() => resolve()));
      this.server.closeAllConnections();
    });
    return this.closing;
  }

  private accept(socket: import("ws").WebSocket, request: IncomingMessage): void {
    const remoteAddress = `${request.socket.remoteAddress}:${request.socket.remotePort}`;
    const { events } = this.options;
    const peer: TaskManagerConnection = new RpcPeer({
      socket,
      local: JobManagerMethods,
      remote: TaskManagerMethods,
      label: `a task manager connecting from ${remoteAddress}`,
      requestTimeoutMs: this.options.heartbeatTimeoutMs,
      onProtocolError: (error) => events.onWarning(error.message),
    });
    let hello: { pid: number; hostname: string } | undefined;
    let registered: RegisteredTaskManager | undefined;
    const refuse = (error: Error): never => {
      events.onWarning(`refused ${peer.label}: ${error.message}`);
      // The error reply goes out first; then the connection is dropped.
      setImmediate(() => peer.close("refused"));
      throw error;
    };
    const requireRegistered = (): RegisteredTaskManager => {
      if (registered !== undefined) return registered;
      throw new IllegalStateError(`${peer.label} has not registered its TaskExecutor`);
    };

    peer.handle("hello", (params) => {
      if (
        params.version !== CONTROL_PLANE_VERSION ||
        params.appVersion !== this.options.appVersion
      ) {
        refuse(
          new ProtocolError(
            `incompatible versions: the task manager speaks control plane version ${params.version} (demo ${params.appVersion}), the job manager version ${CONTROL_PLANE_VERSION} (demo ${this.options.appVersion}); run the same Sluice release everywhere`,
          ),
        );
      }
      hello = { pid: params.pid, hostname: params.hostname };
      peer.label = `the task manager with pid ${params.pid} on ${params.hostname} (${remoteAddress})`;
      return { configuration: { ...this.options.taskManagerConfiguration } };
    });

    peer.handle("registerTaskExecutor", (params) => {
      if (hello === undefined)
        refuse(new IllegalStateError(`${peer.label} registered before hello`));
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
            `${peer.label} loaded the shuffle plugin ${describePlugin(params.plugin)}, but the job manager runs ${describePlugin(expected)}; every process of a job must load the same plugin (shuffle-service-factory.class)`,
          ),
        );
      }
      if (this.taskManagers.length >= this.options.expectedTaskManagers) {
        refuse(
          new IllegalStateError(
            `the job manager already has the ${this.options.expectedTaskManagers} task managers its job needs`,
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
      const info = hello as { pid: number; hostname: string };
      const taskManager = new RegisteredTaskManager(
        {
          index: this.taskManagers.length,
          pid: info.pid,
          hostname: info.hostname,
          remoteAddress,
          location: { resourceId, host: params.host, dataPort: params.dataPort },
        },
        peer,
      );
      registered = taskManager;
      peer.label = taskManager.labelWithAddress;
      this.taskManagers.push(taskManager);
      this.startHeartbeats(taskManager, peer);
      events.onRegistered(taskManager);
      return { index: taskManager.index };
    });

    peer.handle("updateTaskExecutionState", (params) => {
      const taskManager = requireRegistered();
      let update: TaskExecutionState;
      try {
        update = taskExecutionStateFromJSON({
          jobId: params.jobId,
          executionAttemptId: params.executionAttemptId,
          state: params.state,
          ...(params.error === undefined ? {} : { error: params.error as SerializedThrowable }),
          ...(params.result === undefined ? {} : { result: params.result as JsonValue }),
        });
      } catch (error) {
        throw new ProtocolError(
          `${peer.label} sent a malformed task state: ${(error as Error).message}`,
        );
      }
      if (params.progress !== undefined) events.onFinalProgress(taskManager, params.progress);
      const jobMaster = taskManager.jobMasterOf(params.jobId);
      if (jobMaster === undefined) {
        throw new IllegalStateError(
          `${taskManager.label} reported a task of unknown job ${params.jobId}`,
        );
      }
      jobMaster.updateTaskExecutionState(update);
      return null;
    });

    peer.handle("requestPartitionProducerState", async (params) => {
      const taskManager = requireRegistered();
      const jobMaster = taskManager.jobMasterOf(params.jobId);
      if (jobMaster === undefined) {
        throw new IllegalStateError(`${taskManager.label} asked about unknown job ${params.jobId}`);
      }
      let ids: [JobID, IntermediateDataSetID, ResultPartitionID];
      try {
        ids = [
          JobID.fromHex(params.jobId),
          IntermediateDataSetID.fromHex(params.resultId),
          ResultPartitionID.parse(params.partitionId),
        ];
      } catch (error) {
        throw new ProtocolError(`${peer.label} sent malformed ids: ${(error as Error).message}`);
      }
      return { state: await jobMaster.requestPartitionProducerState(...ids) };
    });

    peer.handle("reportProgress", (params) => {
      events.onProgress(requireRegistered(), params.tasks, params.rssMb);
      return null;
    });

    void peer.closed.then((why) => {
      const taskManager = registered;
      if (taskManager === undefined || taskManager.shutdownRequested) return;
      taskManager.shutdownRequested = true;
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
      if (taskManager.shutdownRequested) return;
      taskManager.shutdownRequested = true;
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
    });
  }
}

function describePlugin(plugin: PluginIdentity): string {
  return plugin.package === null ? plugin.reference : `${plugin.reference} (${plugin.package})`;
}
