import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import {
  ErrorCodes,
  PartitionNotFoundError,
  ResourceID,
  ResultPartitionID,
  SluiceError,
} from "@sluice/core";
import {
  type NetworkShuffleEnvironment,
  readTlsSettings,
  type TransportConnection,
  type TransportServer,
} from "@sluice/network";
import {
  BatchShuffleOptions,
  createNetworkShuffleDescriptor,
  createResultPartitionDeploymentDescriptor,
  NettyShuffleEnvironmentOptions,
  type ReadableConfig,
  ResultPartitionDeploymentDescriptorCodec,
  TaskManagerOptions,
} from "@sluice/runtime-api";
import { TcpShuffleServiceFactory, TcpTransport } from "@sluice/shuffle-tcp";
import { overlayConfig } from "./config-overlay.js";
import {
  FrameConnection,
  FrameType,
  MAX_FRAME_SIZE,
  parseJsonPayload,
} from "./frame-connection.js";
import { PushSession } from "./push-session.js";
import {
  describeWorker,
  type ShuffleWorkerAddress,
  workerOf,
} from "./remote-shuffle-descriptor.js";
import { RemoteShuffleOptions } from "./remote-shuffle-options.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

/** What a worker registers with, and re-registers with after its manager connection was lost. */
export interface WorkerRegistration extends ShuffleWorkerAddress {
  /** The partitions the worker stores completely. */
  readonly partitions: readonly string[];
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
  readonly checksums: readonly SubpartitionChecksumJSON[];
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
 *   connection was lost, and releases the partitions the manager tells it to.
 * - Each start is a new **incarnation** (32 random hex digits). Descriptors carry it; a producer
 *   or consumer of another incarnation is refused, so a worker restarted on the same ports never
 *   passes for the one that stored a partition.
 * - Pushed partitions go into the sort-merge files of `@sluice/network` under `io.tmp.dirs`,
 *   with `remote-shuffle.worker.memory.writing-size` of sort buffers; while a partition writes a
 *   spill, what its producer sends meanwhile waits in up to
 *   `remote-shuffle.worker.memory.receiving-size-per-partition`. They are read with the
 *   network shuffle's credit-based protocol (exclusive and floating credit, backlog) on
 *   `remote-shuffle.worker.data-port`, with `remote-shuffle.worker.memory.reading-size` of read
 *   buffers shared by all readers.
 */
export class ShuffleWorker {
  /** The worker's address and incarnation, as descriptors name it. */
  readonly address: ShuffleWorkerAddress;
  private readonly stored = new Map<string, StoredPartition>();
  private readonly sessions = new Map<string, PushSession>();
  private readonly connections = new Set<FrameConnection>();
  private manager: FrameConnection | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private reconnect: NodeJS.Timeout | undefined;
  private closed = false;

  private constructor(
    private readonly configuration: ReadableConfig,
    private readonly transport: TcpTransport,
    readonly environment: NetworkShuffleEnvironment,
    private readonly server: TransportServer,
    host: string,
    incarnation: string,
  ) {
    this.address = {
      host,
      rpcPort: server.port,
      dataPort: environment.getDataPort(),
      incarnation,
    };
  }

  /**
   * Starts a worker: its data server, its push server, and its registration with the shuffle
   * manager (which need not be up yet: the worker keeps trying).
   *
   * @throws ConfigurationError when an option is invalid.
   */
  static async start(configuration: ReadableConfig): Promise<ShuffleWorker> {
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
    const transport = new TcpTransport({ tls: readTlsSettings(configuration) });
    let worker: ShuffleWorker | undefined;
    let server: TransportServer;
    try {
      server = await transport.listen({
        host,
        port: configuration.get(RemoteShuffleOptions.WORKER_RPC_PORT),
        maxFrameSize: MAX_FRAME_SIZE,
        onConnection: (connection) => {
          if (worker === undefined || worker.closed) connection.destroy();
          else worker.wire(connection);
        },
      });
    } catch (error) {
      await environment.close();
      throw error;
    }
    worker = new ShuffleWorker(configuration, transport, environment, server, host, incarnation);
    worker.connectToManager();
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

  /** Partitions being pushed right now. */
  get numberOfPushSessions(): number {
    return this.sessions.size;
  }

  /** True while the worker is registered with its shuffle manager. */
  isRegistered(): boolean {
    return this.manager !== undefined && !this.manager.isClosed();
  }

  /** Deletes these partitions' files; unknown ids are ignored. */
  release(partitionIds: readonly ResultPartitionID[]): void {
    for (const id of partitionIds) {
      this.stored.delete(id.toString());
      this.sessions.get(id.toString())?.abandon(new Error(`${id} was released`));
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
    for (const connection of this.connections) connection.destroy();
    await this.server.close();
    await this.environment.close();
  }

  /**
   * Wires one push-server connection: its first frame makes it a push session or a checksum
   * query connection; errors are answered with an ERROR frame naming them.
   */
  private wire(connection: TransportConnection): void {
    let session: PushSession | "stat" | undefined;
    const frames: FrameConnection = new FrameConnection(
      connection,
      {
        onFrame: (type, payload) => {
          try {
            if (session === undefined) session = this.onFirstFrame(frames, type, payload);
            else if (session === "stat") {
              if (type === FrameType.STAT) this.stat(frames, payload);
            } else session.onFrame(type, payload);
          } catch (error) {
            frames.sendErrorAndClose(error as Error & { code?: string });
          }
        },
        onClose: (cause) => {
          this.connections.delete(frames);
          if (session instanceof PushSession) session.onClose(cause);
        },
      },
      MAX_FRAME_SIZE,
    );
    this.connections.add(frames);
  }

  /** The first frame of a push-server connection decides what it is. */
  private onFirstFrame(
    connection: FrameConnection,
    type: number,
    payload: Buffer,
  ): PushSession | "stat" {
    if (type === FrameType.OPEN) return this.open(connection, payload);
    if (type === FrameType.STAT) {
      this.stat(connection, payload);
      return "stat";
    }
    throw new SluiceError(
      ErrorCodes.PROTOCOL,
      `${describeWorker(this.address)}: unexpected first frame type ${type} from ${connection.remoteAddress}`,
    );
  }

  /** A checksum query of a consumer: `{ id, partitionId }`. */
  private stat(connection: FrameConnection, payload: Buffer): void {
    const { id, partitionId } = parseJsonPayload<{ id: number; partitionId: string }>(
      payload,
      connection.remoteAddress,
    );
    const partition = this.stored.get(partitionId);
    connection.sendJson(FrameType.STAT_REPLY, {
      id,
      incarnation: this.address.incarnation,
      ...(partition === undefined ? {} : { checksums: partition.checksums }),
    });
  }

  private open(connection: FrameConnection, payload: Buffer): PushSession {
    const { descriptor } = parseJsonPayload<{ descriptor: unknown }>(
      payload,
      connection.remoteAddress,
    );
    const deployment = ResultPartitionDeploymentDescriptorCodec.fromJSON(descriptor);
    const partitionId = deployment.shuffleDescriptor.resultPartitionId;
    const assigned = workerOf(deployment.shuffleDescriptor);
    if (assigned.incarnation !== this.address.incarnation) {
      // The partition was assigned to an earlier start of this worker, whose data is gone.
      throw new PartitionNotFoundError(
        `${partitionId} was assigned to ${describeWorker(assigned)}, but ${describeWorker(this.address)} is a later start of it`,
        { partitionId },
      );
    }
    if (this.stored.has(partitionId.toString()) || this.sessions.has(partitionId.toString())) {
      throw new SluiceError(
        ErrorCodes.ILLEGAL_STATE,
        `${describeWorker(this.address)} already has ${partitionId}`,
      );
    }
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
    if (writer === undefined) throw new Error("no writer created");
    writer.setup();
    const session = new PushSession(
      partitionId,
      writer,
      connection,
      {
        onComplete: (done, checksums) => {
          this.sessions.delete(done.partitionId.toString());
          this.stored.set(done.partitionId.toString(), {
            partitionId: done.partitionId,
            checksums,
          });
        },
        onAbandoned: (abandoned) => {
          this.sessions.delete(abandoned.partitionId.toString());
          abandoned.writer.fail(undefined);
          abandoned.writer.close();
          this.environment.releasePartitionsLocally([abandoned.partitionId]);
        },
      },
      {
        maxQueuedBytes: this.configuration.get(
          RemoteShuffleOptions.WORKER_RECEIVING_MEMORY_PER_PARTITION,
        ),
      },
    );
    this.sessions.set(partitionId.toString(), session);
    connection.sendJson(FrameType.OPENED, {
      credit: this.configuration.get(RemoteShuffleOptions.MEMORY_PER_PARTITION),
    });
    return session;
  }

  private connectToManager(): void {
    if (this.closed) return;
    const host = this.configuration.get(RemoteShuffleOptions.MANAGER_ADDRESS);
    const port = this.configuration.get(RemoteShuffleOptions.MANAGER_PORT);
    const retry = () => {
      if (this.closed) return;
      this.reconnect = setTimeout(() => this.connectToManager(), RECONNECT_DELAY_MS);
    };
    this.transport
      .connect({ host, port, connectTimeoutMs: 10_000, maxFrameSize: MAX_FRAME_SIZE })
      .then((connection) => {
        if (this.closed) {
          connection.destroy();
          return;
        }
        const frames = new FrameConnection(
          connection,
          {
            onFrame: (type, payload) => {
              if (type !== FrameType.RELEASE) return;
              const { partitionIds } = parseJsonPayload<{ partitionIds: string[] }>(
                payload,
                frames.remoteAddress,
              );
              this.release(partitionIds.map((id) => ResultPartitionID.parse(id)));
            },
            onClose: () => {
              clearInterval(this.heartbeat);
              if (this.manager === frames) this.manager = undefined;
              retry();
            },
          },
          MAX_FRAME_SIZE,
        );
        this.manager = frames;
        const registration: WorkerRegistration = {
          ...this.address,
          partitions: [...this.stored.keys()],
          pid: process.pid,
        };
        frames.sendJson(FrameType.REGISTER, registration);
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
}
