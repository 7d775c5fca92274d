/**
 * Case 13's rows on where a threaded task manager's network I/O lives: 32 KiB buffers over TCP on
 * 127.0.0.1 between this child and a peer child, with this child's end either on the thread that
 * produces or consumes them (a slot thread with a connection of its own) or on the main thread,
 * the buffers handed between the main thread and the slot thread through a SharedArrayBuffer ring
 * (without a copy on the sending side: the main thread writes the ring's slot to the socket).
 * GB/s at the receiving thread, first chunk to last.
 */
import net from "node:net";
import { Worker } from "node:worker_threads";

/** Where this child's end of the measured connection runs. */
export type RelayMode = "slot thread" | "main thread";

export interface RelayArgs {
  readonly mode: RelayMode;
  readonly port: number;
  readonly durationMs: number;
  readonly chunkBytes: number;
}

export interface RelayPeerArgs {
  /** `sink`: counts what it receives; `source`: sends chunks until the other side closes. */
  readonly role: "sink" | "source";
  readonly chunkBytes: number;
}

const SLOTS = 32;
const WRITTEN = 0;
const READ = 1;
const STOP = 2;

/**
 * A slot thread: fills a ring with chunks (`writer`), or empties it into a scratch buffer
 * (`reader`), with blocking waits (it does no I/O); or sends on its own connection (`sender`), or
 * reads its own connection (`receiver`). Posts what it counted when told to stop.
 */
const SLOT_THREAD = `
  const { parentPort, workerData } = require("node:worker_threads");
  const net = require("node:net");
  const { role, header, ring, slots, chunkBytes, port } = workerData;
  const p = new Int32Array(header);
  const chunk = Buffer.alloc(chunkBytes, 0x5a);
  if (role === "writer" || role === "reader") {
    const bytes = new Uint8Array(ring);
    let n = 0, first = 0, last = 0;
    while (Atomics.load(p, 2) === 0) {
      if (role === "writer") {
        const read = Atomics.load(p, 1);
        if (n - read === slots) { Atomics.wait(p, 1, read, 20); continue; }
        bytes.set(chunk, (n % slots) * chunkBytes);
        n++; Atomics.store(p, 0, n); Atomics.notify(p, 0);
      } else {
        const written = Atomics.load(p, 0);
        if (written === n) { Atomics.wait(p, 0, written, 20); continue; }
        const at = (n % slots) * chunkBytes;
        chunk.set(bytes.subarray(at, at + chunkBytes));
        n++; Atomics.store(p, 1, n); Atomics.notify(p, 1);
        last = performance.now(); if (first === 0) first = last;
      }
    }
    parentPort.postMessage({ bytes: n * chunkBytes, first, last });
  } else if (role === "sender") {
    const socket = net.connect(port, "127.0.0.1", () => {
      const pump = () => {
        while (Atomics.load(p, 2) === 0) if (!socket.write(chunk)) return void socket.once("drain", pump);
        socket.end(() => parentPort.postMessage({}));
      };
      pump();
    });
  } else {
    let bytes = 0, first = 0, last = 0;
    const socket = net.connect(port, "127.0.0.1");
    socket.on("data", (data) => {
      chunk.set(data.subarray(0, Math.min(data.length, chunkBytes)));
      bytes += data.length; last = performance.now(); if (first === 0) first = last;
    });
    const stop = setInterval(() => {
      if (Atomics.load(p, 2) === 0) return;
      clearInterval(stop); socket.destroy();
      parentPort.postMessage({ bytes, first, last });
    }, 5);
  }
`;

interface Counted {
  readonly bytes: number;
  readonly first: number;
  readonly last: number;
}

const perSecond = ({ bytes, first, last }: Counted) =>
  last > first ? bytes / ((last - first) / 1000) : 0;

function slotThread(role: string, header: SharedArrayBuffer, extra: object): Worker {
  return new Worker(SLOT_THREAD, { eval: true, workerData: { role, header, ...extra } });
}

function message<T>(worker: Worker): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The main thread sends the ring's chunks on its socket; a slot is free once written. */
async function sendFromRing(
  socket: net.Socket,
  control: Int32Array,
  ring: Buffer,
  chunkBytes: number,
) {
  await new Promise((resolve) => socket.once("connect", resolve));
  let read = 0;
  let written = 0;
  while (Atomics.load(control, STOP) === 0) {
    const available = Atomics.load(control, WRITTEN);
    if (available === read) {
      const wait = Atomics.waitAsync(control, WRITTEN, available, 20);
      if (wait.async) await wait.value;
      continue;
    }
    const at = (read % SLOTS) * chunkBytes;
    read++;
    const ok = socket.write(ring.subarray(at, at + chunkBytes), () => {
      written++;
      Atomics.store(control, READ, written);
      Atomics.notify(control, READ);
    });
    if (!ok) await new Promise((resolve) => socket.once("drain", resolve));
  }
  await new Promise<void>((resolve) => socket.end(resolve));
}

/**
 * The main thread reads its socket into the ring (one copy, as a channel's decoder copies a
 * payload into a credited buffer), for a slot thread to read out. A full ring pauses the socket.
 */
function receiveIntoRing(
  socket: net.Socket,
  control: Int32Array,
  ring: Buffer,
  chunkBytes: number,
) {
  let pending: Buffer | undefined;
  let written = 0;
  let filled = 0;
  const drain = (): void => {
    while (pending !== undefined && pending.length > 0) {
      if (written - Atomics.load(control, READ) === SLOTS) {
        socket.pause();
        const wait = Atomics.waitAsync(control, READ, Atomics.load(control, READ), 20);
        void (wait.async ? wait.value : Promise.resolve()).then(() => {
          socket.resume();
          drain();
        });
        return;
      }
      const take = Math.min(pending.length, chunkBytes - filled);
      pending.copy(ring, (written % SLOTS) * chunkBytes + filled, 0, take);
      pending = pending.subarray(take);
      filled += take;
      if (filled === chunkBytes) {
        filled = 0;
        written++;
        Atomics.store(control, WRITTEN, written);
        Atomics.notify(control, WRITTEN);
      }
    }
    pending = undefined;
  };
  socket.on("data", (data: Buffer) => {
    pending = data;
    drain();
  });
}

/** This child sends for `durationMs`, from a slot thread or through the main thread. */
export async function relaySend(args: RelayArgs): Promise<null> {
  const header = new SharedArrayBuffer(12);
  const control = new Int32Array(header);
  let done: Promise<unknown>;
  let worker: Worker;
  if (args.mode === "slot thread") {
    worker = slotThread("sender", header, { chunkBytes: args.chunkBytes, port: args.port });
    done = message(worker);
  } else {
    const ring = new SharedArrayBuffer(SLOTS * args.chunkBytes);
    worker = slotThread("writer", header, { ring, slots: SLOTS, chunkBytes: args.chunkBytes });
    done = sendFromRing(
      net.connect(args.port, "127.0.0.1"),
      control,
      Buffer.from(ring),
      args.chunkBytes,
    );
  }
  await sleep(args.durationMs);
  Atomics.store(control, STOP, 1);
  Atomics.notify(control, READ);
  await done;
  await worker.terminate();
  return null;
}

/** This child receives for `durationMs`, on a slot thread or through the main thread; GB/s. */
export async function relayReceive(args: RelayArgs): Promise<number> {
  const header = new SharedArrayBuffer(12);
  const control = new Int32Array(header);
  let worker: Worker;
  let socket: net.Socket | undefined;
  if (args.mode === "slot thread") {
    worker = slotThread("receiver", header, { chunkBytes: args.chunkBytes, port: args.port });
  } else {
    const ring = new SharedArrayBuffer(SLOTS * args.chunkBytes);
    worker = slotThread("reader", header, { ring, slots: SLOTS, chunkBytes: args.chunkBytes });
    socket = net.connect(args.port, "127.0.0.1");
    receiveIntoRing(socket, control, Buffer.from(ring), args.chunkBytes);
  }
  const counted = message<Counted>(worker);
  await sleep(args.durationMs);
  Atomics.store(control, STOP, 1);
  Atomics.notify(control, WRITTEN);
  const result = await counted;
  socket?.destroy();
  await worker.terminate();
  return perSecond(result) / 1e9;
}

// ------------------------------------------------------------------------------ the peer child

let peer: { server: net.Server; counted: Promise<Counted> } | undefined;

/** The peer child listens: a sink counts what one connection sends, a source sends until closed. */
export async function relayPeerListen(args: RelayPeerArgs): Promise<number> {
  let settle: (counted: Counted) => void = () => {};
  const counted = new Promise<Counted>((resolve) => {
    settle = resolve;
  });
  const chunk = Buffer.alloc(args.chunkBytes, 0x5a);
  const server = net.createServer((socket) => {
    socket.on("error", () => {});
    if (args.role === "source") {
      const pump = () => {
        while (!socket.destroyed) if (!socket.write(chunk)) return void socket.once("drain", pump);
      };
      pump();
      socket.on("close", () => settle({ bytes: 0, first: 0, last: 0 }));
      return;
    }
    let bytes = 0;
    let first = 0;
    let last = 0;
    socket.on("data", (data: Buffer) => {
      bytes += data.length;
      last = performance.now();
      if (first === 0) first = last;
    });
    socket.on("end", () => settle({ bytes, first, last }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  peer = { server, counted };
  return (server.address() as net.AddressInfo).port;
}

/** What the peer's sink received (GB/s); closes the peer's server. */
export async function relayPeerResult(): Promise<number> {
  if (peer === undefined) throw new Error("relayPeerListen first");
  const result = await peer.counted;
  peer.server.close();
  peer = undefined;
  return perSecond(result) / 1e9;
}
