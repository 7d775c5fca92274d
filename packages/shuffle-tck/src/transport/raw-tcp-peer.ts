import { createConnection, type Socket } from "node:net";
import type { RawPeer } from "./hostile-peer-limits-suite.js";

/** A raw TCP peer over `socket`: it sends exactly the bytes it is given, and records replies. */
export function rawTcpPeer(socket: Socket): RawPeer {
  const received: Buffer[] = [];
  let closed = false;
  const closedPromise = new Promise<void>((resolve) =>
    socket.once("close", () => {
      closed = true;
      resolve();
    }),
  );
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  // The server resets hostile connections; the test looks at what arrived and at `closed`.
  socket.on("error", () => {});
  return {
    received,
    closed: closedPromise,
    isClosed: () => closed,
    send: (bytes) =>
      new Promise((resolve) => {
        if (closed || socket.write(bytes)) {
          resolve();
          return;
        }
        const done = () => {
          socket.off("drain", done);
          socket.off("close", done);
          resolve();
        };
        socket.on("drain", done);
        socket.on("close", done);
      }),
    pauseReading: () => socket.pause(),
    resumeReading: () => socket.resume(),
    destroy: () => socket.destroy(),
  };
}

/** Opens a plain TCP connection to `host:port` (loopback by default). */
export function connectRawTcp(port: number, host = "127.0.0.1"): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host, port }, () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}
