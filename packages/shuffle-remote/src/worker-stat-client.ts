import { PartitionConnectionError, reconstructError } from "@sluice/core";
import type { Transport } from "@sluice/network";
import {
  FrameConnection,
  FrameType,
  MAX_FRAME_SIZE,
  parseJsonPayload,
} from "./frame-connection.js";
import { describeWorker, type ShuffleWorkerAddress } from "./remote-shuffle-descriptor.js";
import type { SubpartitionChecksumJSON } from "./subpartition-checksum.js";

/** A worker's answer to a checksum query. */
export interface StatReply {
  /** The incarnation of the worker that answered. */
  readonly incarnation: string;
  /** The producer's checksums, one per subpartition; absent when the worker does not store it. */
  readonly checksums?: readonly SubpartitionChecksumJSON[];
}

interface Pending {
  resolve(reply: StatReply): void;
  reject(error: Error): void;
}

/**
 * Asks shuffle workers for the checksums of the partitions they store, over one connection per
 * worker address shared by every gate of a task manager (opened on first use, closed with the
 * environment).
 */
export class WorkerStatClient {
  private readonly connections = new Map<string, Promise<FrameConnection>>();
  private readonly pending = new Map<number, Pending>();
  private readonly pendingByConnection = new Map<FrameConnection, Set<number>>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly transport: Transport,
    private readonly connectTimeoutMs: number,
  ) {}

  /** What `worker` (the one at its address now) stores of `partitionId`. */
  async query(worker: ShuffleWorkerAddress, partitionId: string): Promise<StatReply> {
    const connection = await this.connect(worker);
    const id = this.nextId++;
    return new Promise<StatReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.pendingByConnection.get(connection)?.add(id);
      connection.sendJson(FrameType.STAT, { id, partitionId });
    });
  }

  /** Closes every connection; pending queries fail. Idempotent. */
  close(): void {
    this.closed = true;
    for (const connection of this.connections.values()) {
      connection.then(
        (open) => open.close(),
        () => {},
      );
    }
    this.connections.clear();
  }

  private connect(worker: ShuffleWorkerAddress): Promise<FrameConnection> {
    const key = `${worker.host}:${worker.rpcPort}`;
    const existing = this.connections.get(key);
    if (existing !== undefined) return existing;
    if (this.closed) {
      return Promise.reject(
        new PartitionConnectionError("the remote shuffle environment is closed"),
      );
    }
    const opened = this.transport
      .connect({
        host: worker.host,
        port: worker.rpcPort,
        connectTimeoutMs: this.connectTimeoutMs,
        maxFrameSize: MAX_FRAME_SIZE,
      })
      .then((transportConnection) => {
        const ids = new Set<number>();
        const connection: FrameConnection = new FrameConnection(
          transportConnection,
          {
            onFrame: (type, payload) => {
              const reply = parseJsonPayload<
                StatReply & { id?: number; code?: string; name?: string; message?: string }
              >(payload, key);
              if (type === FrameType.ERROR) {
                this.failAll(
                  connection,
                  reconstructError(reply.code, reply.name ?? "Error", reply.message ?? ""),
                );
                return;
              }
              const waiting = reply.id === undefined ? undefined : this.pending.get(reply.id);
              if (waiting === undefined || reply.id === undefined) return;
              this.pending.delete(reply.id);
              ids.delete(reply.id);
              waiting.resolve(reply);
            },
            onClose: (cause) => {
              if (this.connections.get(key) === opened) this.connections.delete(key);
              this.failAll(
                connection,
                new PartitionConnectionError(
                  `the connection to ${describeWorker(worker)} closed${cause === undefined ? "" : `: ${cause.message}`}`,
                  { cause },
                ),
              );
            },
          },
          MAX_FRAME_SIZE,
        );
        this.pendingByConnection.set(connection, ids);
        if (this.closed) connection.close();
        return connection;
      });
    opened.catch(() => {
      if (this.connections.get(key) === opened) this.connections.delete(key);
    });
    this.connections.set(key, opened);
    return opened;
  }

  private failAll(connection: FrameConnection, error: Error): void {
    const ids = this.pendingByConnection.get(connection);
    if (ids === undefined) return;
    this.pendingByConnection.delete(connection);
    for (const id of ids) {
      const waiting = this.pending.get(id);
      this.pending.delete(id);
      waiting?.reject(error);
    }
  }
}
