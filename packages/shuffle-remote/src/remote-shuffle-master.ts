import { hostname } from "node:os";
import {
  ConfigurationError,
  IllegalStateError,
  type JobID,
  ProtocolError,
  ResultPartitionID,
  TimeoutError,
} from "@sluice/core";
import { type DeadlineAfterPoll, deadlineAfterPoll } from "@sluice/network/plugin";
import type {
  JobShuffleContext,
  PartitionDescriptor,
  ProducerDescriptor,
  ShuffleMaster,
  ShuffleMasterContext,
  TaskInputsOutputsDescriptor,
} from "@sluice/runtime-api";
import { TcpTransport } from "@sluice/shuffle-tcp";
import { checkBlocking } from "./check-blocking.js";
import { type EmbeddedWorker, startEmbeddedWorkers } from "./embedded-shuffle-workers.js";
import type { FrameConnection, FrameHandler } from "./frame-connection.js";
import { FrameServer, type RpcLimits, type RpcServerStats, readRpcLimits } from "./frame-server.js";
import { readManagerTlsSettings } from "./manager-tls.js";
import { partitionAccessToken, sameSecret } from "./partition-access-token.js";
import {
  createRemoteShuffleDescriptor,
  describeWorkerAddress,
  type RemoteShuffleDescriptor,
  type ShuffleWorkerAddress,
  workerOf,
} from "./remote-shuffle-descriptor.js";
import {
  FrameType,
  frameTypeName,
  HeartbeatMessage,
  inFrames,
  PartitionIdsMessage,
  parseMessage,
  parsePartitionId,
  RegisterMessage,
} from "./remote-shuffle-messages.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";
import type { ShuffleWorkerStorage, WorkerRegistration } from "./shuffle-worker.js";

/** What the manager knows of one worker (by address; one incarnation at a time). */
interface TrackedWorker {
  address: ShuffleWorkerAddress;
  /** The secret its incarnation registered with (keys its partitions' access tokens). */
  readonly secret: string;
  pid: number;
  connection: FrameConnection | undefined;
  lastHeartbeat: number;
  /** As of its latest heartbeat. */
  storage: ShuffleWorkerStorage | undefined;
  /** Runs when the grace window of a lost worker ends. */
  graceTimer: NodeJS.Timeout | undefined;
  /** Partitions assigned to it, by id, with their job. */
  readonly partitions: Map<string, { readonly id: ResultPartitionID; readonly jobId: string }>;
}

/** A shuffle worker as the manager knows it. */
export interface RegisteredShuffleWorker {
  readonly address: ShuffleWorkerAddress;
  /** Its process id, as it registered. */
  readonly pid: number;
  /** False during its grace window after it was lost. */
  readonly live: boolean;
  /** Partitions assigned to it and not released. */
  readonly partitions: number;
  /** What its partitions put on disk, as of its latest heartbeat; unset before the first. */
  readonly storage: ShuffleWorkerStorage | undefined;
}

/** A worker lost for good, and the partitions of each job it took with it. */
export interface LostShuffleWorker {
  readonly address: ShuffleWorkerAddress;
  readonly partitions: readonly ResultPartitionID[];
}

/**
 * The job side of the remote shuffle: the ShuffleMaster, which also runs the shuffle manager
 * that shuffle workers register with (`remote-shuffle.manager.rpc-address` / `rpc-port`), and,
 * with `remote-shuffle.manager.embedded-workers`, starts workers itself.
 *
 * - Each BLOCKING partition is assigned to the live worker with the fewest partitions; its
 *   descriptor names the worker's address and incarnation, and carries the job's access token
 *   for it (keyed with the worker's secret), and stores no local resource. Pipelined types are
 *   refused (`SLUICE_ERR_CONFIG`).
 * - A registration never takes the place of a live worker: one that names a live worker's
 *   address with another incarnation, or its incarnation without its secret, is refused.
 * - Released partitions are released on their worker.
 * - A worker whose connection closes or whose heartbeats stop is lost: when it registers again
 *   with the same incarnation within `remote-shuffle.worker.max-recovery-time` it keeps its
 *   partitions; otherwise — or at once when it comes back as a new incarnation — its partitions
 *   are reported to their jobs (`stopTrackingAndReleasePartitions`), so their producers re-run.
 */
export class RemoteShuffleMaster implements ShuffleMaster<RemoteShuffleDescriptor> {
  private readonly workers = new Map<string, TrackedWorker>();
  private readonly jobs = new Map<string, JobShuffleContext>();
  private readonly transport: TcpTransport;
  private readonly limits: RpcLimits;
  private server: FrameServer | undefined;
  private embedded: EmbeddedWorker[] = [];
  private heartbeatCheck: DeadlineAfterPoll | undefined;
  private readonly registrationWaiters = new Set<() => void>();
  private readonly lostListeners = new Set<(lost: LostShuffleWorker) => void>();
  private readonly registeredListeners = new Set<(worker: RegisteredShuffleWorker) => void>();
  private closed = false;

  constructor(private readonly context: ShuffleMasterContext) {
    this.transport = new TcpTransport({ tls: readManagerTlsSettings(context.configuration) });
    this.limits = readRpcLimits(context.configuration);
  }

  /** What the manager's port holds for its peers (for monitoring and the hostile-peer tests). */
  getRpcStats(): RpcServerStats {
    return this.server?.stats() ?? { connections: 0, queuedOutboundBytes: 0, pausedConnections: 0 };
  }

  /** The port the shuffle manager listens on (after `start()`). */
  get managerPort(): number {
    return this.server?.port ?? -1;
  }

  /**
   * Where workers reach the shuffle manager (`host:port`): `remote-shuffle.manager.rpc-address`,
   * or this host's name when that is a wildcard address. With high availability the leading job
   * manager publishes it, and workers started by `sluice shuffleworker` follow it.
   */
  getAdvertisedAddress(): string | undefined {
    if (this.server === undefined) return undefined;
    const configured = this.context.configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS);
    const host = configured === "0.0.0.0" || configured === "::" ? hostname() : configured;
    return `${host.includes(":") ? `[${host}]` : host}:${this.server.port}`;
  }

  /** The live workers' addresses. */
  liveWorkers(): ShuffleWorkerAddress[] {
    return [...this.workers.values()]
      .filter((worker) => worker.connection !== undefined)
      .map((worker) => worker.address);
  }

  /** Every worker the manager tracks: live, or lost and within its grace window. */
  registeredWorkers(): RegisteredShuffleWorker[] {
    return [...this.workers.values()].map((worker) => describeTracked(worker));
  }

  /** Calls `listener` whenever a worker registers (a new incarnation, or one that returned). */
  onWorkerRegistered(listener: (worker: RegisteredShuffleWorker) => void): void {
    this.registeredListeners.add(listener);
  }

  /** The processes of the embedded workers (tests and the demo kill them). */
  embeddedWorkerProcesses(): readonly EmbeddedWorker[] {
    return this.embedded;
  }

  /** Calls `listener` whenever a worker's partitions are reported lost. */
  onWorkerLost(listener: (lost: LostShuffleWorker) => void): void {
    this.lostListeners.add(listener);
  }

  async start(): Promise<void> {
    const configuration = this.context.configuration;
    this.server = await FrameServer.listen({
      name: () => `the shuffle manager on port ${this.managerPort}`,
      transport: this.transport,
      host: configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS),
      port: configuration.get(RemoteShuffleOptions.MANAGER_PORT),
      limits: this.limits,
      accept: (frames) => this.accept(frames),
    });
    const timeout = configuration.get(RemoteShuffleOptions.HEARTBEAT_TIMEOUT);
    const period = Math.max(100, Math.min(timeout / 4, 1000));
    // Each round is judged after the poll phase read what waited: heartbeats the workers sent
    // during a stall of this event loop (a long task, a slow host) count.
    const check = () => {
      for (const worker of this.workers.values()) {
        if (worker.connection !== undefined && Date.now() - worker.lastHeartbeat > timeout) {
          worker.connection.destroy();
        }
      }
      if (!this.closed) this.heartbeatCheck = deadlineAfterPoll(period, check);
    };
    this.heartbeatCheck = deadlineAfterPoll(period, check);
    const count = configuration.get(RemoteShuffleOptions.EMBEDDED_WORKERS);
    if (count > 0) {
      this.embedded = startEmbeddedWorkers(configuration, this.server.port, count);
      await this.awaitWorkers(count);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.heartbeatCheck?.clear();
    for (const worker of this.workers.values()) {
      clearTimeout(worker.graceTimer);
      worker.connection?.close();
    }
    for (const wake of [...this.registrationWaiters]) wake();
    for (const worker of this.embedded) if (worker.child.connected) worker.child.disconnect();
    await Promise.all(this.embedded.map((worker) => worker.exited));
    await this.server?.close();
  }

  registerJob(context: JobShuffleContext): void {
    this.jobs.set(context.jobId.toString(), context);
  }

  unregisterJob(jobId: JobID): void {
    const key = jobId.toString();
    this.jobs.delete(key);
    // Whatever the job side did not release yet goes now.
    for (const worker of this.workers.values()) {
      const ids = [...worker.partitions.values()].filter((p) => p.jobId === key).map((p) => p.id);
      if (ids.length > 0) this.releaseOn(worker, ids);
    }
  }

  async registerPartitionWithProducer(
    jobId: JobID,
    partitionDescriptor: PartitionDescriptor,
    producerDescriptor: ProducerDescriptor,
  ): Promise<RemoteShuffleDescriptor> {
    const id = new ResultPartitionID(
      partitionDescriptor.partitionId,
      producerDescriptor.producerExecutionId,
    );
    checkBlocking(partitionDescriptor.partitionType, `partition ${id}`);
    // Picked and charged in one synchronous step: the subtasks of a vertex are deployed at once,
    // and a pick after an await would see the same loads for all of them.
    const worker = this.leastLoadedWorker() ?? (await this.awaitLeastLoadedWorker());
    const job = jobId.toString();
    worker.partitions.set(id.toString(), { id, jobId: job });
    return createRemoteShuffleDescriptor(id, worker.address, {
      jobId: job,
      token: partitionAccessToken(worker.secret, job, id.toString()),
    });
  }

  releasePartitionExternally(shuffleDescriptor: RemoteShuffleDescriptor): void {
    let address: ShuffleWorkerAddress;
    try {
      address = workerOf(shuffleDescriptor);
    } catch {
      return; // Not one of ours (an unknown descriptor): nothing to release.
    }
    const worker = this.workers.get(keyOf(address));
    if (worker === undefined || worker.address.incarnation !== address.incarnation) return;
    this.releaseOn(worker, [shuffleDescriptor.resultPartitionId]);
  }

  /** Needs nothing of the task manager's network memory beyond the shared pool. */
  computeShuffleMemorySizeForTask(_descriptor: TaskInputsOutputsDescriptor): number {
    return 0;
  }

  private releaseOn(worker: TrackedWorker, ids: readonly ResultPartitionID[]): void {
    for (const id of ids) worker.partitions.delete(id.toString());
    this.sendRelease(
      worker,
      ids.map((id) => id.toString()),
    );
  }

  private sendRelease(worker: TrackedWorker, partitionIds: readonly string[]): void {
    for (const chunk of inFrames(partitionIds)) {
      worker.connection?.sendJson(FrameType.RELEASE, { partitionIds: chunk });
    }
  }

  /**
   * The handler of one connection to the manager's port: it must register within
   * `remote-shuffle.rpc.idle-connection-timeout`; then the heartbeat timeout watches it. Every
   * frame is checked against its schema; what is refused closes this connection only.
   */
  private accept(frames: FrameConnection): FrameHandler {
    frames.setIdleTimeout(
      this.limits.idleConnectionTimeoutMs,
      "registered no shuffle worker ('remote-shuffle.rpc.idle-connection-timeout')",
    );
    let tracked: TrackedWorker | undefined;
    return {
      onFrame: (type, payload) => {
        const from = frames.remoteAddress;
        if (tracked === undefined) {
          if (type !== FrameType.REGISTER) {
            throw new ProtocolError(
              `the shuffle manager expects REGISTER as the first frame from ${from}, got ${frameTypeName(type)}`,
            );
          }
          tracked = this.register(frames, parseMessage(RegisterMessage, type, payload, from));
          // Registered: its heartbeats are watched from now on (`heartbeat-timeout`).
          frames.setIdleTimeout(undefined);
          return;
        }
        if (tracked.connection !== frames) return; // replaced by a newer registration
        if (type === FrameType.HEARTBEAT) {
          const { storage } = parseMessage(HeartbeatMessage, type, payload, from);
          tracked.lastHeartbeat = Date.now();
          tracked.storage = storage;
        } else if (type === FrameType.STORED) {
          const { partitionIds } = parseMessage(PartitionIdsMessage, type, payload, from);
          // A partition the manager does not track for this worker (released meanwhile, or
          // assigned before this manager started) goes at once: nothing is kept that no job
          // will release.
          const unknown = partitionIds.filter((id) => {
            parsePartitionId(id, from);
            return !(tracked as TrackedWorker).partitions.has(id);
          });
          if (unknown.length > 0) this.sendRelease(tracked, unknown);
        } else {
          throw new ProtocolError(
            `the shuffle manager does not accept ${frameTypeName(type)} frames (from ${from})`,
          );
        }
      },
      onClose: () => {
        if (tracked !== undefined && tracked.connection === frames) this.lose(tracked);
      },
    };
  }

  /** True while a worker's connection is open and its heartbeats are on time. */
  private isLive(worker: TrackedWorker): boolean {
    const timeout = this.context.configuration.get(RemoteShuffleOptions.HEARTBEAT_TIMEOUT);
    return (
      worker.connection !== undefined &&
      !worker.connection.isClosed() &&
      Date.now() - worker.lastHeartbeat <= timeout
    );
  }

  /**
   * Registers a worker, or re-associates one that returned. A registration never takes the
   * place of a live worker: an address that a live worker holds with another incarnation is
   * refused (a restarted worker's new start is admitted once the old one is lost), and the
   * same incarnation must repeat its secret.
   *
   * @throws IllegalStateError or ProtocolError for a refused registration.
   */
  private register(connection: FrameConnection, registration: WorkerRegistration): TrackedWorker {
    const address: ShuffleWorkerAddress = {
      host: registration.host,
      rpcPort: registration.rpcPort,
      dataPort: registration.dataPort,
      incarnation: registration.incarnation,
    };
    const key = keyOf(address);
    const known = this.workers.get(key);
    if (known !== undefined && known.address.incarnation === address.incarnation) {
      if (!sameSecret(known.secret, registration.secret)) {
        throw new ProtocolError(
          `${describeWorkerAddress(address)}: a registration from ${connection.remoteAddress} names the registered incarnation with another secret; refused`,
        );
      }
      if (known.address.dataPort !== address.dataPort) {
        throw new ProtocolError(
          `${describeWorkerAddress(address)}: a registration from ${connection.remoteAddress} names the registered incarnation with another data port; refused`,
        );
      }
      // Back (within its grace window, or over a new connection while the manager still held
      // the old one): re-associate, with its partitions.
      clearTimeout(known.graceTimer);
      known.graceTimer = undefined;
      if (known.connection !== connection) known.connection?.destroy();
      known.connection = connection;
      known.lastHeartbeat = Date.now();
      known.pid = registration.pid;
      for (const listener of this.registeredListeners) listener(describeTracked(known));
      return known;
    }
    if (known !== undefined) {
      if (this.isLive(known)) {
        throw new IllegalStateError(
          `the shuffle manager has a live worker at ${describeWorkerAddress(address)}: a registration from ${connection.remoteAddress} with another incarnation is refused until that worker is lost`,
        );
      }
      // A new start on the address of a lost worker: the old incarnation's partitions are gone.
      known.connection?.destroy();
      this.reportLost(known);
    }
    const tracked: TrackedWorker = {
      address,
      secret: registration.secret,
      pid: registration.pid,
      connection,
      lastHeartbeat: Date.now(),
      storage: undefined,
      graceTimer: undefined,
      partitions: new Map(),
    };
    this.workers.set(key, tracked);
    for (const listener of this.registeredListeners) listener(describeTracked(tracked));
    for (const wake of [...this.registrationWaiters]) wake();
    return tracked;
  }

  private lose(worker: TrackedWorker): void {
    worker.connection = undefined;
    if (this.closed || worker.graceTimer !== undefined) return;
    const grace = this.context.configuration.get(RemoteShuffleOptions.MAX_RECOVERY_TIME);
    worker.graceTimer = setTimeout(() => this.reportLost(worker), grace);
    worker.graceTimer.unref();
  }

  private reportLost(worker: TrackedWorker): void {
    clearTimeout(worker.graceTimer);
    worker.graceTimer = undefined;
    if (this.workers.get(keyOf(worker.address)) === worker)
      this.workers.delete(keyOf(worker.address));
    const byJob = new Map<string, ResultPartitionID[]>();
    for (const { id, jobId } of worker.partitions.values()) {
      byJob.set(jobId, [...(byJob.get(jobId) ?? []), id]);
    }
    worker.partitions.clear();
    const all = [...byJob.values()].flat();
    for (const listener of this.lostListeners)
      listener({ address: worker.address, partitions: all });
    for (const [jobId, ids] of byJob) {
      this.jobs
        .get(jobId)
        ?.stopTrackingAndReleasePartitions(ids)
        .catch((error: unknown) => this.context.onFatalError(error as Error));
    }
  }

  /** The live worker storing the fewest partitions, if one is live. */
  private leastLoadedWorker(): TrackedWorker | undefined {
    let best: TrackedWorker | undefined;
    for (const worker of this.workers.values()) {
      if (worker.connection === undefined) continue;
      if (best === undefined || worker.partitions.size < best.partitions.size) best = worker;
    }
    return best;
  }

  /** Waits for a live worker, up to the registration timeout; then the least loaded one. */
  private async awaitLeastLoadedWorker(): Promise<TrackedWorker> {
    await this.awaitWorkers(1);
    const later = this.leastLoadedWorker();
    if (later === undefined) {
      throw new ConfigurationError(
        `no shuffle worker is registered with the shuffle manager on port ${this.managerPort}: start workers (sluice-shuffle-worker -D remote-shuffle.manager.rpc-port=${this.managerPort}) or set 'remote-shuffle.manager.embedded-workers'`,
      );
    }
    return later;
  }

  /** Waits until `count` workers are live, up to the registration timeout. */
  private async awaitWorkers(count: number): Promise<void> {
    const timeoutMs = this.context.configuration.get(
      RemoteShuffleOptions.WORKER_REGISTRATION_TIMEOUT,
    );
    const deadline = Date.now() + timeoutMs;
    while (this.liveWorkers().length < count && !this.closed) {
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new TimeoutError(
          `${this.liveWorkers().length} of ${count} shuffle workers registered with the shuffle manager on port ${this.managerPort} within 'remote-shuffle.manager.worker-registration-timeout' (${timeoutMs} ms)`,
        );
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          this.registrationWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.registrationWaiters.add(done);
      });
    }
  }
}

function describeTracked(worker: TrackedWorker): RegisteredShuffleWorker {
  return {
    address: worker.address,
    pid: worker.pid,
    live: worker.connection !== undefined,
    partitions: worker.partitions.size,
    storage: worker.storage,
  };
}

function keyOf(address: ShuffleWorkerAddress): string {
  return `${address.host}:${address.rpcPort}`;
}
