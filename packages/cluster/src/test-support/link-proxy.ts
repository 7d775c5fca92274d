import { createServer, type Server, type Socket, connect as tcpConnect } from "node:net";

/**
 * A TCP link between a task manager and its job manager that a test can cut and heal, as a
 * network partition does: while cut nothing is forwarded either way and nothing is closed (no
 * FIN, no RST), and new connections are accepted but get no further. Healing forwards again,
 * what waited included.
 */
export class LinkProxy {
  private readonly server: Server;
  private readonly pairs = new Set<{ client: Socket; upstream: Socket }>();
  /** Ends whose other end went away while cut: a partition passes no FIN or RST on. */
  private readonly pendingDrops = new Set<() => void>();
  private cutNow = false;

  private constructor(server: Server) {
    this.server = server;
  }

  /** Listens on 127.0.0.1 (a free port) and forwards to `target`. */
  static async start(target: { readonly host: string; readonly port: number }): Promise<LinkProxy> {
    let proxy: LinkProxy | undefined;
    const server = createServer((client) => proxy?.accept(client, target));
    proxy = new LinkProxy(server);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    return proxy;
  }

  /** The port a task manager connects to. */
  get port(): number {
    return (this.server.address() as { port: number }).port;
  }

  /** Stops forwarding, closing nothing. */
  cut(): void {
    this.cutNow = true;
    for (const { client, upstream } of this.pairs) {
      client.pause();
      upstream.pause();
    }
  }

  /** Forwards again; what went away meanwhile is passed on now. */
  heal(): void {
    this.cutNow = false;
    for (const { client, upstream } of this.pairs) {
      client.resume();
      upstream.resume();
    }
    for (const drop of [...this.pendingDrops]) drop();
    this.pendingDrops.clear();
  }

  /** Stops listening and drops every connection. */
  async close(): Promise<void> {
    this.cutNow = false;
    this.pendingDrops.clear();
    for (const { client, upstream } of this.pairs) {
      client.destroy();
      upstream.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { readonly host: string; readonly port: number }): void {
    const upstream = tcpConnect(target.port, target.host);
    const pair = { client, upstream };
    this.pairs.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.cutNow) {
      client.pause();
      upstream.pause();
    }
    const drop = () => {
      if (this.cutNow) {
        this.pendingDrops.add(drop);
        return;
      }
      this.pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    // Either end going away (a reset included) is passed on by closing the other.
    client.on("error", drop).on("close", drop);
    upstream.on("error", drop).on("close", drop);
  }
}
