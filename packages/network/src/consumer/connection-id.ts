/**
 * Identifies a connection to a producer's data server (Flink's ConnectionID): address plus a
 * connection index. Channels with equal ids share one connection.
 */
export class ConnectionID {
  readonly host: string;
  readonly port: number;
  readonly connectionIndex: number;
  private readonly key: string;

  constructor(host: string, port: number, connectionIndex = 0) {
    this.host = host;
    this.port = port;
    this.connectionIndex = connectionIndex;
    this.key = `${host}:${port}#${connectionIndex}`;
  }

  /** `host:port` (for messages). */
  get address(): string {
    return `${this.host}:${this.port}`;
  }

  toString(): string {
    return this.key;
  }
}
