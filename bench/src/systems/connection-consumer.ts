/**
 * The consumer of a peer system over one connection (a socket, a WebSocket): `connect()` opens
 * it and starts counting what arrives, `drain()` awaits the end of the producer's run, and
 * `cleanup()` drops the connection, which the next run opens again.
 */
import type { DrainResult, ThroughputConsumer, ThroughputParams } from "../roles.js";
import { ByteThrottle } from "../throttle.js";

export abstract class ConnectionConsumer<C> implements ThroughputConsumer {
  /** The run's connection, until cleanup. */
  protected connection: C | undefined;
  /** Resolves with the run's counts when the producer ended it. */
  protected done: Promise<DrainResult> | undefined;

  constructor(protected readonly params: ThroughputParams) {}

  abstract connect(endpoint: unknown): Promise<void>;

  /** Closes `connection` at once, whatever it still buffers. */
  protected abstract destroy(connection: C): void;

  /**
   * The slow consumer's throttle (`consumerBytesPerSecond`, case 5): pauses `connection` while
   * over its rate, so the rest waits in the network. Undefined without a rate.
   */
  protected throttle(connection: { pause(): void; resume(): void }): ByteThrottle | undefined {
    const rate = this.params.consumerBytesPerSecond;
    return rate === undefined
      ? undefined
      : new ByteThrottle(
          rate,
          () => connection.pause(),
          () => connection.resume(),
        );
  }

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
