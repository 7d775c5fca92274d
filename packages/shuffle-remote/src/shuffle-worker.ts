import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import {
  IllegalStateError,
  PartitionNotFoundError,
  ProtocolError,
  ResourceID,
  type ResultPartitionID,
  reconstructError,
  type SluiceError,
} from "@sluice/core";
import {
  emitTransportWarning,
  type NetworkShuffleEnvironment,
  readTlsSettings,
} from "@sluice/network/plugin";
import {
  BatchShuffleOptions,
  createNetworkShuffleDescriptor,
  createResultPartitionDeploymentDescriptor,
  DescriptorError,
  NettyShuffleEnvironmentOptions,
  type ReadableConfig,
  type ResultPartitionDeploymentDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import { TcpShuffleServiceFactory, TcpTransport } from "@sluice/shuffle-tcp";
import { overlayConfig } from "./config-overlay.js";
import { FrameConnection, type FrameHandler, MAX_FRAME_SIZE } from "./frame-connection.js";
import { FrameServer, type RpcLimits, type RpcServerStats, readRpcLimits } from "./frame-server.js";
import { readManagerTlsSettings } from "./manager-tls.js";
import { isPartitionAccessToken, newWorkerSecret } from "./partition-access-token.js";
import { PushAdmission, type PushTicket } from "./push-admission.js";
import { PushSession } from "./push-session.js";
import {
  accessOf,
  describeWorker,
  describeWorkerAddress,
  type ShuffleWorkerAddress,
  workerOf,
} from "./remote-shuffle-descriptor.js";
import {
  ErrorMessage,
  FrameType,
  frameTypeName,
  inFrames,
  OpenMessage,
  PartitionIdsMessage,
  parseMessage,
  parsePartitionId,
  StatMessage,
} from "./remote-shuffle-messages.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

/** What a worker registers with, and registers again with after its manager connection was lost. */
export interface WorkerRegistration extends ShuffleWorkerAddress {
  /**
   * 64 hex digits, new at every start, told only to the shuffle manager: it keys the access
   * tokens of the worker's partitions, and only a registration that repeats it may take over
   * its incarnation's place.
   */
  readonly secret: string;
  /** The worker's process id, for operators (the demo prints it). */
  readonly pid: number;
}

/** What a worker's stored partitions put on disk since it started (sent with its heartbeats). */
export interface ShuffleWorkerStorage {
  /** Bytes appended to data and index files. */
  readonly fileBytesWritten: number;
  /** Data bytes before compression. */
  readonly bytesBeforeCompression: number;
  /** Data bytes as written. */
  readonly bytesAfterCompression: number;
  /** Data and index files created. */
  readonly filesCreated: number;
  /** Files deleted when their partition was released. */
  readonly filesDeleted: number;
  /** Files created and not deleted yet. */
  readonly filesOnDisk: number;
}

/** One partition a shuffle worker stores completely. */
export interface StoredPartition {
  readonly partitionId: ResultPartitionID;
  /** The job the manager assigned it for. */
  readonly jobId: string;
  readonly checksums: readonly SubpartitionChecksumJSON[];
}

/** Where a worker's shuffle manager listens. */
export interface ShuffleManagerAddress {
  /** Its host name or IP address (an IPv6 address without brackets). */
  readonly host: string;
  /** Its port (`remote-shuffle.manager.rpc-port` of its job manager). */
  readonly port: number;
}

/** How a worker starts. */
export interface ShuffleWorkerStartOptions {
  /**
   * Registers with no shuffle manager until {@link ShuffleWorker.followManager} names one: for a
   * worker that follows the leading job manager's manager through high availability (the
   * `sluice shuffleworker` command does). Default: the configured manager
   * (`remote-shuffle.manager.rpc-address` / `rpc-port`).
   */
  readonly awaitManager?: boolean;
}

/** The delay before a worker tries its shuffle manager again after the connection was lost. */
const RECONNECT_DELAY_MS = 500;

/**
 * A shuffle worker (flink-remote-shuffle's ShuffleWorker, Celeborn's Worker): a process that
 * stores BLOCKING partitions pushed to it by producers and serves them to consumers, so the data
 * outlives the task managers that produced it.
 *
 * - It registers with the shuffle manager (`remote-shuffle.manager.rpc-address` / `rpc-port`),
 *   heartbeats every `remote-shuffle.worker.heartbeat-interval`, registers again when the
 *   connection was lost, tells the manager which partitions it stores, and releases the ones the
 *   manager tells it to (or does not know).
 * - Each start is a new **incarnation** (32 random hex digits) with a new **secret** that only
 *   the manager learns. Descriptors carry the incarnation and an access token the manager made
 *   with the secret: a push (OPEN) or checksum query (STAT) whose token does not prove that the
 *   manager assigned the partition to this start, for that job, is refused, and the worker never
 *   tells a peer its incarnation.
 * - Pushed partitions go into the sort-merge files of `@sluice/network` under `io.tmp.dirs`,
 *   with `remote-shuffle.worker.memory.writing-size` of sort buffers, handed out fairly among
 *   producer hosts (a push waits for them rather than failing); while a partition writes a
 *   spill, what its producer sends meanwhile waits in up to
 *   `remote-shuffle.worker.memory.receiving-size-per-partition`. A session whose producer sends
 *   nothing for `remote-shuffle.worker.push-session.idle-timeout` is ended and its data deleted.
 *   Stored partitions are read with the network shuffle's credit-based protocol on
 *   `remote-shuffle.worker.data-port`, with `remote-shuffle.worker.memory.reading-size` of read
 *   buffers shared by all readers; every stored buffer is checked against its CRC32 before it
 *   leaves.
 * - Its port bounds what any peer can make it hold: see `remote-shuffle.rpc.*`.
 */
export class ShuffleWorker {
  /** The worker's address and incarnation, as descriptors name it. */
  readonly address: ShuffleWorkerAddress;
  private readonly secret = newWorkerSecret();
  private readonly stored = new Map<string, StoredPartition>();
  private readonly sessions = new Map<string, PushSession>();
  /** Partitions whose push was opened and waits for sort buffers, by id. */
  private readonly waitingPushes = new Set<string>();
  private readonly admission: PushAdmission;
  private readonly limits: RpcLimits;
  private manager: FrameConnection | undefined;
  /** The manager it registers with; `undefined` while it waits to be told one. */
  private managerAddress: ShuffleManagerAddress | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private lastRefusal: string | undefined;
  private closed = false;

  private constructor(
    private readonly configuration: ReadableConfig,
    /** The transport to the shuffle manager (TLS whenever internal TLS is on). */
    private readonly managerTransport: TcpTransport,
    readonly environment: NetworkShuffleEnvironment,
    private readonly server: FrameServer,
    host: string,
    incarnation: string,
  ) {
    this.address = {
      host,
      rpcPort: server.port,
      dataPort: environment.getDataPort(),
      incarnation,
    };
    this.limits = readRpcLimits(configuration);
    this.managerAddress = {
      host: configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS),
      port: configuration.get(RemoteShuffleOptions.MANAGER_PORT),
    };
    const pool = environment.networkBufferPool;
    this.admission = new PushAdmission({
      maxSessionsPerPeer: configuration.get(RemoteShuffleOptions.WORKER_MAX_PUSH_SESSIONS_PER_PEER),
      // Twice the idle timeout: any idle session holding buffers has ended by then, so a push
      // that still waits is behind live producers only.
      maxWaitMs: 2 * configuration.get(RemoteShuffleOptions.WORKER_PUSH_SESSION_IDLE_TIMEOUT),
      unreservedSegments: () => pool.getNumberOfUnreservedSegments(),
      totalSegments: pool.totalNumberOfMemorySegments,
      name: () => describeWorkerAddress(this.address),
    });
  }

  /**
   * Starts a worker: its data server, its push server, and its registration with the shuffle
   * manager (which need not be up yet: the worker keeps trying), unless `options.awaitManager`.
   *
   * @throws ConfigurationError when an option is invalid.
   */
  static async start(
    configuration: ReadableConfig,
    options: ShuffleWorkerStartOptions = {},
  ): Promise<ShuffleWorker> {
    const incarnation = randomBytes(16).toString("hex");
    const host = configuration.get(RemoteShuffleOptions.WORKER_HOST);
    const tmpDirs = (configuration.get(TaskManagerOptions.TMP_DIRS) ?? tmpdir())
      .split(",")
      .map((dir) => dir.trim())
      .filter((dir) => dir !== "");
    // The network shuffle environment stores and serves the partitions; the worker's own keys
    // become the keys it reads.
    const inner = overlayConfig(configuration, {
      [NettyShuffleEnvironmentOptions.DATA_PORT.key]: configuration.get(
        RemoteShuffleOptions.WORKER_DATA_PORT,
      ),
      [NettyShuffleEnvironmentOptions.DATA_BIND_HOST.key]: host,
      [BatchShuffleOptions.BATCH_SHUFFLE_READ_MEMORY.key]: configuration.get(
        RemoteShuffleOptions.WORKER_READING_MEMORY,
      ),
      // Consumers verify checksums of the uncompressed stream, and their gates' decompression
      // follows their task managers' settings: the worker stores buffers as they came.
      [BatchShuffleOptions.BATCH_SHUFFLE_COMPRESSION_ENABLED.key]: false,
      [BatchShuffleOptions.SORT_SHUFFLE_MIN_PARALLELISM.key]: 1,
    });
    // Read first: settings that cannot be used fail the start before anything listens.
    const transport = new TcpTransport({ tls: readTlsSettings(configuration) });
    const managerTransport = new TcpTransport({ tls: readManagerTlsSettings(configuration) });
    const environment = new TcpShuffleServiceFactory().createShuffleEnvironment({
      configuration: inner,
      taskExecutorResourceId: ResourceID.fromHex(incarnation),
      networkMemorySize: configuration.get(RemoteShuffleOptions.WORKER_WRITING_MEMORY),
      localCommunicationOnly: false,
      hostAddress: host,
      numberOfSlots: 1,
      tmpDirPaths: tmpDirs,
    });
    await environment.start();
    let worker: ShuffleWorker | undefined;
    let server: FrameServer;
    try {
      server = await FrameServer.listen({
        name: () =>
          worker === undefined ? "a shuffle worker" : describeWorkerAddress(worker.address),
        transport,
        host,
        port: configuration.get(RemoteShuffleOptions.WORKER_RPC_PORT),
        limits: readRpcLimits(configuration),
        accept: (frames) => {
          if (worker === undefined || worker.closed) {
            frames.destroy();
            return { onFrame: () => {}, onClose: () => {} };
          }
          return worker.accept(frames);
        },
        onError: (error) =>
          emitTransportWarning(
            worker === undefined ? "a shuffle worker" : describeWorkerAddress(worker.address),
            error,
          ),
      });
    } catch (error) {
      await environment.close();
      throw error;
    }
    worker = new ShuffleWorker(
      configuration,
      managerTransport,
      environment,
      server,
      host,
      incarnation,
    );
    if (options.awaitManager === true) worker.managerAddress = undefined;
    else worker.connectToManager();
    return worker;
  }

  /** The partitions stored completely, by id. */
  storedPartitions(): readonly StoredPartition[] {
    return [...this.stored.values()];
  }

  /** What the stored partitions put on disk since the worker started. */
  storage(): ShuffleWorkerStorage {
    const counters = this.environment.batchShuffleCounters;
    return {
      fileBytesWritten: counters.fileBytesWritten,
      bytesBeforeCompression: counters.bytesBeforeCompression,
      bytesAfterCompression: counters.bytesAfterCompression,
      filesCreated: counters.filesCreated,
      filesDeleted: counters.filesDeleted,
      filesOnDisk: counters.filesOnDisk,
    };
  }

  /** Partitions being pushed right now (holding sort buffers). */
  get numberOfPushSessions(): number {
    return this.sessions.size;
  }

  /** Pushes opened and waiting for sort buffers. */
  get numberOfWaitingPushes(): number {
    return this.admission.numberOfWaiting;
  }

  /** What the worker's push port holds for its peers (for monitoring and the hostile-peer tests). */
  getRpcStats(): RpcServerStats {
    return this.server.stats();
  }

  /** True while the worker is registered with its shuffle manager. */
  isRegistered(): boolean {
    return this.manager !== undefined && !this.manager.isClosed();
  }

  /**
   * Registers with the shuffle manager at `address` from now on, leaving the one it registered
   * with (whose partitions the new manager does not know are released when it says so: the new
   * manager's jobs run their producers again); `undefined` leaves it and waits for the next. A
   * worker that follows the leading job manager calls it on every change of leader, so it never
   * serves a deposed leader's manager.
   */
  followManager(address: ShuffleManagerAddress | undefined): void {
    const current = this.managerAddress;
    if (address?.host === current?.host && address?.port === current?.port) return;
    this.managerAddress = address;
    if (this.closed) return;
    clearTimeout(this.reconnect);
    clearInterval(this.heartbeat);
    const left = this.manager;
    this.manager = undefined;
    left?.close();
    this.connectToManager();
  }

  /** Deletes these partitions' files; unknown ids are ignored. */
  release(partitionIds: readonly ResultPartitionID[]): void {
    for (const id of partitionIds) {
      this.stored.delete(id.toString());
      this.sessions.get(id.toString())?.abandon(new IllegalStateError(`${id} was released`));
    }
    this.environment.releasePartitionsLocally(partitionIds);
  }

  /** Stops serving, deletes every stored partition and leaves the shuffle manager. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.heartbeat);
    clearTimeout(this.reconnect);
    this.manager?.close();
    await this.server.close();
    await this.environment.close();
  }

  /**
   * The handler of one connection to the push port. Its first frame makes it a push session
   * (OPEN) or a checksum query connection (STAT), within `remote-shuffle.rpc.idle-connection-
   * timeout`; anything else, or a frame that does not match its schema, is refused with
   * `SLUICE_ERR_PROTOCOL` and closes this connection only.
   */
  private accept(frames: FrameConnection): FrameHandler {
    const idle = this.limits.idleConnectionTimeoutMs;
    frames.setIdleTimeout(
      idle,
      "opened no push session and asked no checksum query ('remote-shuffle.rpc.idle-connection-timeout')",
    );
    let state: PushSession | PendingPush | "stat" | undefined;
    return {
      onFrame: (type, payload) => {
        const from = frames.remoteAddress;
        if (state === undefined) {
          if (type === FrameType.OPEN) {
            let admitted: PushSession | undefined;
            const pending = this.open(
              frames,
              parseMessage(OpenMessage, type, payload, from),
              (session) => {
                admitted = session;
                state = session;
              },
            );
            // Admitted at once, or waiting for sort buffers.
            state = admitted ?? pending;
          } else if (type === FrameType.STAT) {
            state = "stat";
            frames.setIdleTimeout(
              idle,
              "asked no checksum query ('remote-shuffle.rpc.idle-connection-timeout')",
            );
            this.stat(frames, parseMessage(StatMessage, type, payload, from));
          } else {
            throw new ProtocolError(
              `${describeWorkerAddress(this.address)} expects OPEN or STAT as the first frame from ${from}, got ${frameTypeName(type)}`,
            );
          }
        } else if (state === "stat") {
          if (type !== FrameType.STAT) {
            throw new ProtocolError(
              `${describeWorkerAddress(this.address)}: a checksum connection from ${from} sent ${frameTypeName(type)}`,
            );
          }
          this.stat(frames, parseMessage(StatMessage, type, payload, from));
        } else if (state instanceof PushSession) {
          state.onFrame(type, payload);
        } else {
          throw new ProtocolError(
            `${describeWorkerAddress(this.address)}: the producer ${from} sent ${frameTypeName(type)} before its push of ${state.partitionId} was admitted (OPENED)`,
          );
        }
      },
      onRefused: (error) => {
        if (state instanceof PushSession) state.abandon(error);
        else if (state !== undefined && state !== "stat") this.cancelWaiting(state);
      },
      onClose: (cause) => {
        if (state instanceof PushSession) state.onClose(cause);
        else if (state !== undefined && state !== "stat") this.cancelWaiting(state);
      },
    };
  }

  /**
   * A checksum query: answered only when its token proves the manager assigned the partition to
   * this start of the worker, for that job; a query for another incarnation is told the
   * partition is not here, without naming this one.
   */
  private stat(connection: FrameConnection, query: StatMessage): void {
    const partitionId = parsePartitionId(query.partitionId, connection.remoteAddress);
    const id = partitionId.toString();
    const reply = (error: SluiceError) =>
      connection.sendJson(FrameType.STAT_REPLY, {
        id: query.id,
        error: { code: error.code, name: error.name, message: error.message },
      });
    if (query.incarnation !== this.address.incarnation) {
      reply(
        new PartitionNotFoundError(
          `${id} was assigned to incarnation ${query.incarnation} of ${describeWorkerAddress(this.address)}, which is gone: the worker there is a later start that does not hold it`,
          { partitionId },
        ),
      );
      return;
    }
    this.checkAccess(query.jobId, id, query.token, connection);
    const partition = this.stored.get(id);
    const checksum = partition?.checksums[query.subpartition];
    if (partition === undefined || partition.jobId !== query.jobId || checksum === undefined) {
      reply(
        new PartitionNotFoundError(
          `${describeWorker(this.address)} does not store subpartition ${query.subpartition} of ${id} completely (released, or its push never finished)`,
          { partitionId },
        ),
      );
      return;
    }
    connection.sendJson(FrameType.STAT_REPLY, { id: query.id, checksum });
  }

  /**
   * @throws ProtocolError when `token` is not the access token the manager made for this job's
   *   partition on this start of the worker.
   */
  private checkAccess(jobId: string, partitionId: string, token: string, from: FrameConnection) {
    if (!isPartitionAccessToken(token, this.secret, jobId, partitionId)) {
      throw new ProtocolError(
        `${describeWorkerAddress(this.address)}: ${from.remoteAddress} named ${partitionId} of job ${jobId} with an access token the shuffle manager did not make for it here; refused`,
      );
    }
  }

  /** Opens a push: checked, then admitted when its sort buffers are free (maybe at once). */
  private open(
    connection: FrameConnection,
    message: OpenMessage,
    onAdmitted: (session: PushSession) => void,
  ): PendingPush {
    const from = connection.remoteAddress;
    let deployment: ResultPartitionDeploymentDescriptor;
    let assigned: ShuffleWorkerAddress;
    let access: { jobId: string; token: string };
    try {
      deployment = ResultPartitionDeploymentDescriptorCodec.fromJSON(message.descriptor);
      assigned = workerOf(deployment.shuffleDescriptor);
      access = accessOf(deployment.shuffleDescriptor);
    } catch (error) {
      if (!(error instanceof DescriptorError)) throw error;
      throw new ProtocolError(
        `${describeWorkerAddress(this.address)}: the OPEN frame from ${from} carries a malformed descriptor: ${error.message}`,
        { cause: error },
      );
    }
    const partitionId = deployment.shuffleDescriptor.resultPartitionId;
    const id = partitionId.toString();
    if (assigned.incarnation !== this.address.incarnation) {
      // The partition was assigned to an earlier start of this worker, whose data is gone.
      throw new PartitionNotFoundError(
        `${id} was assigned to ${describeWorker(assigned)}, which is gone: the worker there is a later start that does not hold it`,
        { partitionId },
      );
    }
    this.checkAccess(access.jobId, id, access.token, connection);
    if (!deployment.partitionDescriptor.partitionType.isBlocking) {
      throw new ProtocolError(
        `${describeWorkerAddress(this.address)}: ${from} opened a push of ${id}, a ${deployment.partitionDescriptor.partitionType.name} partition; only BLOCKING ones are stored`,
      );
    }
    if (this.stored.has(id) || this.sessions.has(id) || this.waitingPushes.has(id)) {
      throw new IllegalStateError(`${describeWorker(this.address)} already has ${id}`);
    }
    const peer = hostOf(from);
    const ticket: PushTicket = {
      peer,
      segments: this.environment.settings.sortShuffleMinBuffers,
    };
    const pending: PendingPush = { partitionId, ticket };
    // Waiting for buffers is the worker's doing, not the producer's: no idle timeout meanwhile.
    connection.setIdleTimeout(undefined);
    this.waitingPushes.add(id);
    this.admission.request(
      ticket,
      () => {
        this.waitingPushes.delete(id);
        let session: PushSession;
        try {
          session = this.startSession(connection, deployment, access.jobId, ticket);
        } catch (error) {
          this.admission.release(ticket);
          connection.refuse(error as Error);
          return;
        }
        onAdmitted(session);
      },
      (error) => {
        this.waitingPushes.delete(id);
        connection.refuse(error);
      },
    );
    return pending;
  }

  private cancelWaiting(pending: PendingPush): void {
    this.waitingPushes.delete(pending.partitionId.toString());
    this.admission.cancel(pending.ticket);
  }

  /** Sets up the partition's writer (its sort buffers are free now) and tells the producer. */
  private startSession(
    connection: FrameConnection,
    deployment: ResultPartitionDeploymentDescriptor,
    jobId: string,
    ticket: PushTicket,
  ): PushSession {
    const partitionId = deployment.shuffleDescriptor.resultPartitionId;
    const [writer] = this.environment.createResultPartitionWriters(
      { ownerName: `push of ${partitionId}`, executionAttemptId: partitionId.producerId },
      [
        createResultPartitionDeploymentDescriptor(
          deployment.partitionDescriptor,
          createNetworkShuffleDescriptor(partitionId, this.environment.resourceId, {
            kind: "remote",
            host: this.address.host,
            port: this.address.dataPort,
            connectionIndex: 0,
          }),
          deployment.maxParallelism,
        ),
      ],
    );
    if (writer === undefined) throw new IllegalStateError("no writer created");
    writer.setup();
    const ended = () => {
      this.admission.release(ticket);
      // The partition's sort buffers return once its last file operation completed.
      void whenPoolDestroyed(writer, () => this.closed).then(() => this.admission.pump());
    };
    const session = new PushSession(
      partitionId,
      writer,
      connection,
      {
        onComplete: (done, checksums) => {
          this.sessions.delete(done.partitionId.toString());
          this.stored.set(done.partitionId.toString(), {
            partitionId: done.partitionId,
            jobId,
            checksums,
          });
          ended();
          this.manager?.sendJson(FrameType.STORED, {
            partitionIds: [done.partitionId.toString()],
          });
        },
        onAbandoned: (abandoned) => {
          this.sessions.delete(abandoned.partitionId.toString());
          abandoned.writer.fail(undefined);
          abandoned.writer.close();
          this.environment.releasePartitionsLocally([abandoned.partitionId]);
          ended();
        },
      },
      {
        maxQueuedBytes: this.configuration.get(
          RemoteShuffleOptions.WORKER_RECEIVING_MEMORY_PER_PARTITION,
        ),
      },
    );
    this.sessions.set(partitionId.toString(), session);
    const idleTimeoutMs = this.configuration.get(
      RemoteShuffleOptions.WORKER_PUSH_SESSION_IDLE_TIMEOUT,
    );
    const maxRecordSize = this.configuration.get(NettyShuffleEnvironmentOptions.MAX_RECORD_SIZE);
    // Admitted: frames of one record each may come now, and silence ends the session.
    connection.setMaxFrameSize(
      Math.min(MAX_FRAME_SIZE, maxRecordSize + DATA_FRAME_OVERHEAD),
      "'taskmanager.network.max-record-size' in a push session",
    );
    connection.setIdleTimeout(
      idleTimeoutMs,
      `sent nothing to its push session of ${partitionId} ('remote-shuffle.worker.push-session.idle-timeout')`,
    );
    connection.sendJson(FrameType.OPENED, {
      credit: this.configuration.get(RemoteShuffleOptions.MEMORY_PER_PARTITION),
      idleTimeoutMs,
    });
    return session;
  }

  private connectToManager(): void {
    const target = this.managerAddress;
    if (this.closed || target === undefined) return;
    // A manager followed since (a new leader's) has a connection attempt of its own.
    const superseded = () => this.closed || this.managerAddress !== target;
    const retry = () => {
      if (superseded()) return;
      this.reconnect = setTimeout(() => this.connectToManager(), RECONNECT_DELAY_MS);
    };
    const { host, port } = target;
    this.managerTransport
      .connect({ host, port, connectTimeoutMs: 10_000, maxFrameSize: this.limits.maxMessageSize })
      .then((connection) => {
        if (superseded()) {
          connection.destroy();
          return;
        }
        const frames = new FrameConnection(
          connection,
          {
            // A manager it left (a deposed leader's) is not obeyed, whatever it still sends.
            onFrame: (type, payload) => {
              if (this.manager === frames) this.onManagerFrame(frames, type, payload);
            },
            onClose: () => {
              if (this.manager !== frames) return; // left for another manager
              clearInterval(this.heartbeat);
              this.manager = undefined;
              retry();
            },
          },
          {
            maxFrameSize: this.limits.maxMessageSize,
            maxFrameSizeSource: "'remote-shuffle.rpc.max-message-size'",
            frameReadTimeoutMs: this.limits.frameReadTimeoutMs,
          },
        );
        this.manager = frames;
        const registration: WorkerRegistration = {
          ...this.address,
          secret: this.secret,
          pid: process.pid,
        };
        frames.sendJson(FrameType.REGISTER, registration);
        // What it stores, so a manager that does not know a partition (it was released while
        // the worker was away, or the manager is new) releases it.
        for (const partitionIds of inFrames([...this.stored.keys()])) {
          frames.sendJson(FrameType.STORED, { partitionIds });
        }
        clearInterval(this.heartbeat);
        this.heartbeat = setInterval(
          () =>
            frames.sendJson(FrameType.HEARTBEAT, {
              partitions: this.stored.size,
              storage: this.storage(),
            }),
          this.configuration.get(RemoteShuffleOptions.HEARTBEAT_INTERVAL),
        );
      }, retry);
  }

  private onManagerFrame(frames: FrameConnection, type: number, payload: Buffer): void {
    const from = `the shuffle manager ${frames.remoteAddress}`;
    if (type === FrameType.RELEASE) {
      this.lastRefusal = undefined;
      const { partitionIds } = parseMessage(PartitionIdsMessage, type, payload, from);
      this.release(partitionIds.map((id) => parsePartitionId(id, from)));
      return;
    }
    if (type === FrameType.ERROR) {
      const { code, name, message } = parseMessage(ErrorMessage, type, payload, from);
      // Refused (a live worker holds this address, say): reported once, then retried quietly.
      if (this.lastRefusal !== message) {
        this.lastRefusal = message;
        emitTransportWarning(
          `${describeWorkerAddress(this.address)}: ${from} refused it (${code})`,
          reconstructError(code, name, message),
        );
      }
      return;
    }
    throw new ProtocolError(`${from} sent ${frameTypeName(type)}, which a worker does not accept`);
  }
}

/** A push opened and waiting for its sort buffers. */
interface PendingPush {
  readonly partitionId: ResultPartitionID;
  readonly ticket: PushTicket;
}

/** Bytes a DATA frame adds to its record: frame header, subpartition index, record length. */
const DATA_FRAME_OVERHEAD = 5 + 4 + 4;

/** The host of a `host:port` (IPv6 hosts keep their colons). */
function hostOf(address: string): string {
  const colon = address.lastIndexOf(":");
  return colon < 0 ? address : address.slice(0, colon);
}

/**
 * Resolves once the pool of a partition that stopped writing is destroyed (after its last file
 * operation), when its sort buffers are free for the next push. Checked every few milliseconds,
 * only while a session ends.
 */
async function whenPoolDestroyed(
  writer: { getBufferPool(): unknown },
  stopped: () => boolean,
): Promise<void> {
  const pool = writer.getBufferPool() as { isDestroyed(): boolean } | undefined;
  while (pool !== undefined && !pool.isDestroyed() && !stopped()) {
    await new Promise((resolve) => setTimeout(resolve, 5).unref());
  }
}
