/**
 * The consumer of a peer system over one connection (a socket, a WebSocket): `connect()` opens
 * it and starts counting what arrives, `drain()` awaits the end of the producer's run, and
 * `cleanup()` drops the connection, which the next run opens again.
 */
import type { DrainResult, ThroughputConsumer } from "../roles.js";

export abstract class ConnectionConsumer<C> implements ThroughputConsumer {
  /** The run's connection, until cleanup. */
  protected connection: C | undefined;
  /** Resolves with the run's counts when the producer ended it. */
  protected done: Promise<DrainResult> | undefined;

  abstract connect(endpoint: unknown): Promise<void>;

  /** Closes `connection` at once, whatever it still buffers. */
  protected abstract destroy(connection: C): void;

  drain(): Promise<DrainResult> {
    return this.done as Promise<DrainResult>;
  }

  async cleanup(): Promise<void> {
    const connection = this.connection;
    this.connection = undefined;
    if (connection !== undefined) this.destroy(connection);
  }

  async close(): Promise<void> {
    await this.cleanup();
  }
}
