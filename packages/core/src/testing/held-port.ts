import { createServer } from "node:net";

/** A port on 127.0.0.1 that a real server listens on, so that nothing else can listen there. */
export interface HeldPort {
  readonly port: number;
  /** Stops listening; idempotent. */
  close(): Promise<void>;
}

/**
 * Listens on a free port of 127.0.0.1 and keeps it, for tests of what a server does when its
 * port is in use (`EADDRINUSE`). Close it in the test's clean-up.
 */
export async function holdPort(): Promise<HeldPort> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  let closed: Promise<void> | undefined;
  return {
    port: (server.address() as { port: number }).port,
    close: () => {
      closed ??= new Promise((resolve) => server.close(() => resolve()));
      return closed;
    },
  };
}

/**
 * A port of 127.0.0.1 that was free a moment ago and nothing listens on now: for a server a test
 * starts in another process on a port it must know in advance, or a client that must find nobody
 * listening.
 */
export async function freePort(): Promise<number> {
  const held = await holdPort();
  await held.close();
  return held.port;
}
