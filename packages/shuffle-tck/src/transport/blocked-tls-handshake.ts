import { connect as tlsConnect } from "node:tls";
import { blockEventLoop } from "@sluice/core/testing";
import { type TlsSettings, tlsClientOptions } from "@sluice/network/plugin";

/**
 * Whether a TLS server on `127.0.0.1:port` of this process drops a client whose handshake was
 * completed while their shared event loop was blocked past the server's handshake deadline
 * (`deadlineMs`, `security.ssl.internal.handshake-timeout`).
 *
 * The client (with `settings`) blocks the event loop for 3 × `deadlineMs` as soon as its own side
 * of the handshake completed: the server's last handshake bytes then wait in its socket while its
 * deadline comes due. True when the server closed the connection before that, or within
 * 2 × `deadlineMs` after; false when it kept it.
 */
export async function closedAfterBlockedTlsHandshake(
  port: number,
  settings: TlsSettings,
  deadlineMs: number,
): Promise<boolean> {
  const socket = tlsConnect({ host: "127.0.0.1", port, ...tlsClientOptions(settings) });
  socket.on("error", () => {});
  // Flowing, so the server's close is read: a socket that is never read may never see the end of
  // its stream, and then never emits 'close'.
  socket.resume();
  const closed = new Promise<true>((resolve) => socket.once("close", () => resolve(true)));
  try {
    const secure = new Promise<false>((resolve) =>
      socket.once("secureConnect", () => {
        blockEventLoop(3 * deadlineMs);
        resolve(false);
      }),
    );
    if (await Promise.race([secure, closed])) return true;
    const keptFor = new Promise<false>((resolve) =>
      setTimeout(() => resolve(false), 2 * deadlineMs).unref(),
    );
    return await Promise.race([closed, keptFor]);
  } finally {
    socket.destroy();
  }
}
