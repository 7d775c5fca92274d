/**
 * The batch-shuffle case's "fs streams through a store process" row: what a remote shuffle
 * cannot beat on this machine. The writer sends the framed records over TCP to a store process
 * of its own (`fs-store-process.ts`, forked as the remote shuffle's writer forks its shuffle
 * worker, and not pinned to a CPU either), which writes them to a file with fs streams; the
 * reader gets the file back over TCP from the store. The fs streams baseline plus the two network
 * hops and the third process a remote shuffle adds, and nothing of a shuffle's own work.
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import type {
  BatchParams,
  BatchReader,
  BatchReadResult,
  BatchWriteResult,
} from "../batch-roles.js";
import { unpin } from "../harness.js";
import { encodeStoreHeader, type StoreOperation } from "./fs-store-header.js";
import { FsBatchWriter, readFramedRecords, writeFramedRecords } from "./fs-streams.js";

/** What the reader needs: the store's port and the file it keeps. */
interface StoredFile {
  readonly port: number;
  readonly file: string;
}

/** Connects to the store and asks for one operation on the stored file. */
async function open(op: StoreOperation, stored: StoredFile): Promise<Socket> {
  const socket = connect(stored.port, "127.0.0.1");
  await once(socket, "connect");
  socket.write(encodeStoreHeader(op, stored.file));
  return socket;
}

/** The fs streams writer, its file written by the store: the same folder, files and clean-up. */
export class FsStoreBatchWriter extends FsBatchWriter {
  private store: ReturnType<typeof fork> | undefined;
  private port = 0;

  override async prepare(): Promise<void> {
    await super.prepare();
    if (this.store !== undefined) return;
    const store = fork(new URL("./fs-store-process.js", import.meta.url), [], {
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    });
    this.store = store;
    const [message] = (await once(store, "message")) as [{ port: number }];
    this.port = message.port;
    if (store.pid !== undefined) unpin(store.pid);
  }

  override async write(): Promise<BatchWriteResult> {
    const file = await this.nextFile();
    const stored: StoredFile = { port: this.port, file };
    const start = performance.now();
    const socket = await open("W", stored);
    // The store answers one byte once the file is written, and then closes.
    const written = (async () => {
      let acknowledged = false;
      for await (const _ of socket) acknowledged = true;
      if (!acknowledged) throw new Error("the store closed without writing the file");
    })();
    const keySum = await writeFramedRecords(socket, this.params);
    await written;
    return {
      sent: this.params.records,
      keySum,
      writeMs: performance.now() - start,
      endpoint: stored,
    };
  }

  override async close(): Promise<void> {
    const store = this.store;
    this.store = undefined;
    if (store !== undefined && store.exitCode === null) {
      store.disconnect();
      await once(store, "exit");
    }
    await super.close();
  }
}

export class FsStoreBatchReader implements BatchReader {
  constructor(private readonly params: BatchParams) {}

  async read(endpoint: unknown): Promise<BatchReadResult> {
    const start = performance.now();
    const socket = await open("R", endpoint as StoredFile);
    socket.end();
    const { received, keySum } = await readFramedRecords(socket, this.params.recordSize);
    return { received, keySum, readMs: performance.now() - start };
  }

  async cleanup(): Promise<void> {}

  async close(): Promise<void> {}
}
