/**
 * The store process of the batch-shuffle case's "fs streams through a store process" row: a
 * hand-written remote store, the least a remote shuffle does. A writer connects and sends a file's
 * bytes, which go to disk through `fs.createWriteStream`, and gets one byte back once they are
 * written; a reader connects and gets the file back through `fs.createReadStream`. One TCP
 * connection per file and direction, a header naming the file, nothing else: no sort, no index,
 * no credit, no checksum.
 *
 * Each connection opens with a header (`fs-store-header.ts`). Forked by the writer's process
 * (`fs-store.ts`); it sends `{ port }` when listening and exits when that process goes away.
 */
import { createReadStream, createWriteStream } from "node:fs";
import { createServer, type Socket } from "node:net";
import { finished, pipeline } from "node:stream/promises";
import { readStoreHeader } from "./fs-store-header.js";

async function serve(socket: Socket): Promise<void> {
  const { op, path } = await readStoreHeader(socket);
  if (op === "W") {
    const file = createWriteStream(path, { flags: "wx", mode: 0o600 });
    socket.pipe(file);
    await finished(file);
    socket.end(Buffer.of(1));
  } else if (op === "R") {
    await pipeline(createReadStream(path), socket);
  } else {
    throw new Error(`unknown operation ${JSON.stringify(op)}`);
  }
}

const server = createServer({ allowHalfOpen: true }, (socket) => {
  serve(socket).catch((error: unknown) => {
    process.stderr.write(`fs store: ${String(error)}\n`);
    socket.destroy();
  });
});
server.listen(0, "127.0.0.1", () => {
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no TCP address");
  process.send?.({ port: address.port });
});
process.on("disconnect", () => process.exit(0));
