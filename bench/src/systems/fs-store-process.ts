/**
 * The store process of the batch-shuffle case's "fs streams through a store process" row: a
 * hand-written remote store, the least a remote shuffle does. A writer connects and sends a file's
 * bytes, which go to disk through `fs.createWriteStream`, and gets one byte back once they are
 * written; a reader connects and gets the file back through `fs.createReadStream`. One TCP
 * connection per file and direction, a header naming the file, nothing else: no sort, no index,
 * no credit, no checksum.
 *
 * Header: one byte, `W` (write) or `R` (read), the path's UTF-8 byte length as uint16 big
 * endian, the path. Forked by the writer's process (`fs-store.ts`); it sends `{ port }` when
 * listening and exits when that process goes away.
 */
import { once } from "node:events";
import { createReadStream, createWriteStream } from "node:fs";
import { createServer, type Socket } from "node:net";
import { finished, pipeline } from "node:stream/promises";

const HEADER_BYTES = 3;

/** Reads the header off `socket`, leaving the bytes after it to be read. */
async function readHeader(socket: Socket): Promise<{ op: string; path: string }> {
  let buffered = Buffer.alloc(0);
  for (;;) {
    const chunk = socket.read() as Buffer | null;
    if (chunk === null) {
      if (socket.readableEnded) throw new Error("the connection closed inside the header");
      await once(socket, "readable");
      continue;
    }
    buffered = Buffer.concat([buffered, chunk]);
    if (buffered.length < HEADER_BYTES) continue;
    const end = HEADER_BYTES + buffered.readUInt16BE(1);
    if (buffered.length < end) continue;
    if (buffered.length > end) socket.unshift(buffered.subarray(end));
    const op = String.fromCharCode(buffered[0] as number);
    return { op, path: buffered.toString("utf8", HEADER_BYTES, end) };
  }
}

async function serve(socket: Socket): Promise<void> {
  const { op, path } = await readHeader(socket);
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
