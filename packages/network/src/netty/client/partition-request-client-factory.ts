import { PartitionConnectionError, TimeoutError } from "@sluice/core";
import type { ConnectionID } from "../../consumer/connection-id.js";
import type { ConnectionManager } from "../../consumer/connection-manager.js";
import type { Transport } from "../transport/transport.js";
import { CreditBasedPartitionRequestClientHandler } from "./credit-based-partition-request-client-handler.js";
import { NettyPartitionRequestClient } from "./netty-partition-request-client.js";

/** Connection settings of the client side. */
export interface ClientOptions {
  readonly connectTimeoutMs: number;
  /** Additional connect attempts after the first fails (`taskmanager.network.retries`). */
  readonly retries: number;
  readonly maxFrameSize: number;
  /**
   * How long a connection whose last channel left stays open for the next job's channels; 0
   * closes it at once.
   */
  readonly keepIdleMs?: number;
}

/**
 * Creates and shares connections to producers' data servers (Flink's
 * PartitionRequestClientFactory): one connection per ConnectionID, however many channels use it;
 * concurrent requests for the same id wait for the same connect.
 */
export class PartitionRequestClientFactory implements ConnectionManager {
  private readonly transport: Transport;
  private readonly options: ClientOptions;
  private readonly clients = new Map<string, Promise<NettyPartitionRequestClient>>();
  private readonly resolved = new Map<string, NettyPartitionRequestClient>();
  private readonly handlers = new Set<CreditBasedPartitionRequestClientHandler>();
  private closed = false;
  private connectionsOpened = 0;

  constructor(transport: Transport, options: ClientOptions) {
    this.transport = transport;
    this.options = options;
  }

  createPartitionRequestClient(connectionId: ConnectionID): Promise<NettyPartitionRequestClient> {
    if (this.closed) {
      return Promise.reject(new PartitionConnectionError("the connection manager is shut down"));
    }
    const key = connectionId.toString();
    let client = this.clients.get(key);
    if (client === undefined) {
      client = this.connect(connectionId);
      this.clients.set(key, client);
      // Not swallowed: the caller gets the rejection. This only forgets the failed attempt.
      client.catch(() => {
        if (this.clients.get(key) === client) this.clients.delete(key);
      });
    }
    return client;
  }

  private async connect(connectionId: ConnectionID): Promise<NettyPartitionRequestClient> {
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.options.retries; attempt++) {
      try {
        const connection = await this.transport.connect({
          host: connectionId.host,
          port: connectionId.port,
          connectTimeoutMs: this.options.connectTimeoutMs,
          maxFrameSize: this.options.maxFrameSize,
        });
        const key = connectionId.toString();
        const handler: CreditBasedPartitionRequestClientHandler =
          new CreditBasedPartitionRequestClientHandler(
            connectionId,
            connection,
            this.options.maxFrameSize,
            () => {
              // The connection died: forget it so the next request reconnects.
              this.handlers.delete(handler);
              client.cancelIdleTimer();
              this.forget(key, client);
            },
          );
        const client: NettyPartitionRequestClient = new NettyPartitionRequestClient(
          handler,
          () => {
            this.forget(key, client);
            handler.close();
          },
          this.options.keepIdleMs ?? 0,
        );
        this.handlers.add(handler);
        this.connectionsOpened++;
        this.resolved.set(key, client);
        return client;
      } catch (error) {
        lastError = error;
      }
    }
    const cause = lastError as Error;
    throw new PartitionConnectionError(
      `could not connect to ${connectionId.address} over ${this.transport.name} after ${this.options.retries + 1} attempt(s): ${cause?.message}`,
      { cause: cause instanceof TimeoutError ? cause : lastError },
    );
  }

  private forget(key: string, client: NettyPartitionRequestClient): void {
    if (this.resolved.get(key) !== client) return;
    this.resolved.delete(key);
    this.clients.delete(key);
  }

  /** Number of open connections. */
  getNumberOfConnections(): number {
    return this.handlers.size;
  }

  /** Connections opened so far (a reused connection counts once). */
  getNumberOfConnectionsOpened(): number {
    return this.connectionsOpened;
  }

  /** Closes every connection. Idempotent. */
  shutdown(): void {
    this.closed = true;
    for (const client of this.resolved.values()) client.cancelIdleTimer();
    for (const handler of this.handlers) handler.close();
    this.handlers.clear();
    this.clients.clear();
    this.resolved.clear();
  }
}
