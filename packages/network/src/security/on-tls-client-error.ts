import type { Server, TLSSocket } from "node:tls";

/**
 * Hands `drop` each client of `server` (a node:tls or node:https server) that failed its TLS
 * handshake. A handshake timeout (`security.ssl.internal.handshake-timeout`, Node's
 * `handshakeTimeout`) counts only if the handshake is still incomplete after the event loop's poll
 * phase read what had arrived: Node checks that deadline with a timer, and after a stall of the
 * event loop (a long task, a slow host) the timers phase runs before the poll phase reads the
 * client's last handshake bytes, which the client sent in time. The check phase (`setImmediate`)
 * comes after the poll phase, so it looks again there; a client whose handshake completed
 * meanwhile has become a `secureConnection` and is kept. Every other failure is dropped at once.
 *
 * `drop` is the only judge: a `tlsClientError` listener the server already has is removed
 * (node:https registers one that destroys the socket at once, as `clientError`).
 */
export function onTlsClientError(
  server: Server,
  drop: (error: Error, socket: TLSSocket) => void,
): void {
  server.removeAllListeners("tlsClientError");
  const secured = new WeakSet<TLSSocket>();
  server.on("secureConnection", (socket: TLSSocket) => secured.add(socket));
  server.on("tlsClientError", (error: Error, socket: TLSSocket) => {
    if ((error as NodeJS.ErrnoException).code !== "ERR_TLS_HANDSHAKE_TIMEOUT") {
      drop(error, socket);
      return;
    }
    setImmediate(() => {
      if (!secured.has(socket)) drop(error, socket);
    });
  });
}
