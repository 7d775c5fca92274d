/**
 * The header that opens each connection to the batch-shuffle case's store process
 * (`fs-store-process.ts`): one byte, `W` (write) or `R` (read), the file's path as its UTF-8 byte
 * length (uint16 big endian) and the bytes. A write's data, or a read's file, follows it.
 */
import { once } from "node:events";
import type { Socket } from "node:net";

const HEADER_BYTES = 3;

/** What a connection asks the store for. */
export type StoreOperation = "W" | "R";

/** The header asking for `op` on the file at `path`. */
export function encodeStoreHeader(op: StoreOperation, path: string): Buffer {
  const bytes = Buffer.from(path, "utf8");
  const header = Buffer.allocUnsafe(HEADER_BYTES);
  header[0] = op.charCodeAt(0);
  header.writeUInt16BE(bytes.length, 1);
  return Buffer.concat([header, bytes]);
}

/** Reads the header off `socket`, leaving the bytes after it to be read. */
export async function readStoreHeader(socket: Socket): Promise<{ op: string; path: string }> {
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
