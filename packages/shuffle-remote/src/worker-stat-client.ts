import { PartitionConnectionError, type ResultPartitionID, reconstructError } from "@sluice/core";
import type { Transport } from "@sluice/network/plugin";
import { FrameConnection } from "./frame-connection.js";
import {
  describeWorker,
  type PartitionAccess,
  type ShuffleWorkerAddress,
} from "./remote-shuffle-descriptor.js";
import {
  ErrorMessage,
  FrameType,
  frameTypeName,
  parseMessage,
  StatReplyMessage,
} from "./remote-shuffle-messages.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

interface Pending {
  resolve(checksum: SubpartitionChecksumJSON): void;
  reject(error: Error): void;
}

/** What a {@link WorkerStatClient} needs. */
export interface WorkerStatClientOptions {
  readonly connectTimeoutMs: number;
  /** Largest reply frame (`remote-shuffle.rpc.max-message-size`). */
  readonly maxMessageSize: number;
  /**
   * A connection without a pending query is closed after this long: half the workers'
   * `remote-shuffle.rpc.idle-connection-timeout`, so a query never goes out on a connection the
   * worker is closing as idle.
   */
  readonly idleCloseMs: number;
}

/** One connection to a worker's push port, for its checksum queries. */
interface StatConnection {
  readonly opened: Promise<FrameConnection>;
  readonly ids: Set<number>;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * Asks shuffle workers for the checksums of the subpartitions their consumers read, over one
 * connection per worker address shared by every gate of a task manager (opened on first use,
 * closed once idle, and with the environment). Each query carries the incarnation and access
 * token of the consumer's descriptor: the worker answers only those, and answers "not found"
 * (without saying which start it is) when its incarnation differs.
 */
export class WorkerStatClient {
  private readonly connections = new Map<string, StatConnection>();
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly options: WorkerStatClientOptions,
  ) {}

  /**
   * The checksum `worker` stores for `subpartition` of `partitionId`.
   *
   * @throws PartitionNotFoundError when the worker is another incarnation or does not store it
   *   completely; PartitionConnectionError when it cannot be asked.
   */
  async query(
    worker: ShuffleWorkerAddress,
    partitionId: ResultPartitionID,
    subpartition: number,
    access: PartitionAccess,
  ): Promise<SubpartitionChecksumJSON> {
    const stat = this.connect(worker);
    const id = this.nextId++;
    clearTimeout(stat.idleTimer);
    stat.idleTimer = undefined;
    stat.ids.add(id);
    const answered = new Promise<SubpartitionChecksumJSON>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
    });
    try {
      const connection = await stat.opened;
      connection.sendJson(FrameType.STAT, {
        id,
        partitionId: partitionId.toString(),
        subpartition,
        incarnation: worker.incarnation,
        jobId: access.jobId,
        token: access.token,
      });
    } catch (error) {
      this.settle(stat, id)?.reject(error as Error);
    }
    return answered;
  }

  /** Closes every connection; pending queries fail. Idempotent. */
  close(): void {
    this.closed = true;
    for (const stat of this.connections.values()) {
      clearTimeout(stat.idleTimer);
      stat.opened.then(
        (open) => open.close(),
        () => {},
      );
    }
    this.connections.clear();
  }

  private connect(worker: ShuffleWorkerAddress): StatConnection {
    const key = `${worker.host}:${worker.rpcPort}`;
    const existing = this.connections.get(key);
    if (existing !== undefined) return existing;
    if (this.closed) {
      return {
        opened: Promise.reject(
          new PartitionConnectionError("the remote shuffle environment is closed"),
        ),
        ids: new Set(),
        idleTimer: undefined,
      };
    }
    const ids = new Set<number>();
    const failAll = (error: Error) => {
      for (const id of [...ids]) this.settle(stat, id)?.reject(error);
    };
    const opened = this.transport
      .connect({
        host: worker.host,
        port: worker.rpcPort,
        connectTimeoutMs: this.options.connectTimeoutMs,
        maxFrameSize: this.options.maxMessageSize,
      })
      .then((transportConnection) => {
        const from = describeWorker(worker);
        const connection: FrameConnection = new FrameConnection(
          transportConnection,
          {
            onFrame: (type, payload) => {
              if (type === FrameType.ERROR) {
                const { code, name, message } = parseMessage(ErrorMessage, type, payload, from);
                failAll(reconstructError(code, name, message));
                return;
              }
              if (type !== FrameType.STAT_REPLY) {
                throw new Error(`${from} sent ${frameTypeName(type)} on a checksum connection`);
              }
              const reply = parseMessage(StatReplyMessage, type, payload, from);
              const waiting = this.settle(stat, reply.id);
              if (waiting === undefined) return;
              if ("checksum" in reply) waiting.resolve(reply.checksum);
              else {
                const { code, name, message } = reply.error;
                waiting.reject(reconstructError(code, name, message));
              }
            },
            onClose: (cause) => {
              clearTimeout(stat.idleTimer);
              if (this.connections.get(key) === stat) this.connections.delete(key);
              failAll(
                new PartitionConnectionError(
                  `the connection to ${describeWorker(worker)} closed${cause === undefined ? "" : `: ${cause.message}`}`,
                  { cause },
                ),
              );
            },
          },
          { maxFrameSize: this.options.maxMessageSize },
        );
        if (this.closed) connection.close();
        return connection;
      });
    const stat: StatConnection = { opened, ids, idleTimer: undefined };
    opened.catch((error: unknown) => {
      if (this.connections.get(key) === stat) this.connections.delete(key);
      failAll(error as Error);
    });
    this.connections.set(key, stat);
    return stat;
  }

  /** Takes query `id` off its connection; closes the connection later when it has none left. */
  private settle(stat: StatConnection, id: number): Pending | undefined {
    const waiting = this.pending.get(id);
    this.pending.delete(id);
    stat.ids.delete(id);
    if (stat.ids.size === 0 && stat.idleTimer === undefined) {
      stat.idleTimer = setTimeout(() => {
        stat.idleTimer = undefined;
        if (stat.ids.size > 0) return;
        for (const [key, known] of this.connections) {
          if (known === stat) this.connections.delete(key);
        }
        stat.opened.then(
          (open) => open.close(),
          () => {},
        );
      }, this.options.idleCloseMs);
      stat.idleTimer.unref();
    }
    return waiting;
  }
}
