/**
 * Raw `node:net` baselines: length-prefixed records over one socket, no serialization framework.
 * `batched` packs whole records into 32 KiB writes (the hand-batched ceiling); `per-record` does
 * one `write()` per record. Both honour backpressure with a 1 MiB watermark on the bytes queued
 * in the process, unless the case asks to ignore it (case 5), where only a safety cap stops the
 * queue from growing.
 */
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { FramedRecordParser, makeFramedRecords } from "../records.js";
import type {
  LatencyParams,
  LatencyPeer,
  PingResult,
  ProduceResult,
  ThroughputParams,
  ThroughputProducer,
} from "../roles.js";
import { ArrivalClock } from "./arrival-clock.js";
import { ConnectionConsumer } from "./connection-consumer.js";
import { RoundTrips } from "./round-trips.js";

const BATCH_BYTES = 32 * 1024;
/** The server (producer) socket's buffer size, as Sluice's TCP transport sets it. */
export const SOCKET_HIGH_WATER_MARK = 256 * 1024;
/**
 * Backpressure as the ws baseline and the WS plugin do it: keep writing while at most this many
 * bytes are queued in the process, then wait for the write callback of the write that crossed it.
 * (Waiting for 'drain' after write() returned false lets the queue run dry before refilling: a
 * bubble in the pipe each time.)
 */
const QUEUED_HIGH_WATER_MARK = 1024 * 1024;

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      const address = server.address();
      resolve(typeof address === "object" && address !== null ? address.port : 0);
    });
  });
}

function connect(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port, noDelay: true });
    socket.once("connect", () => {
      socket.off("error", reject);
      resolve(socket);
    });
    socket.once("error", reject);
  });
}

export class NetThroughputProducer implements ThroughputProducer {
  private server: Server | undefined;
  private socket: Promise<Socket> | undefined;
  private readonly framed: Buffer[];

  constructor(private readonly params: ThroughputParams) {
    this.framed = makeFramedRecords(params.recordSize);
  }

  async prepare(): Promise<unknown> {
    const server = createServer({ noDelay: true, highWaterMark: SOCKET_HIGH_WATER_MARK });
    this.server = server;
    this.socket = new Promise((resolve) => server.once("connection", resolve));
    return { port: await listen(server) };
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const socket = await (this.socket as Promise<Socket>);
    socket.on("error", () => {});
    const { honourBackpressure, batching } = this.params;
    const cap = this.params.queuedCapBytes ?? Number.POSITIVE_INFINITY;
    const framed = this.framed;
    const mask = framed.length - 1;
    const recordBytes = (framed[0] as Buffer).length;
    const perBatch = Math.max(1, Math.floor(BATCH_BYTES / recordBytes));
    const start = performance.now();
    const end = start + durationMs;
    let sent = 0;
    let keySum = 0;
    let capped = false;
    let maxQueued = 0;
    let writes = 0;
    while (performance.now() < end && !socket.destroyed) {
      for (let w = 0; w < 16; w++) {
        const queued = socket.writableLength;
        if (queued > maxQueued) maxQueued = queued;
        if (!honourBackpressure && queued >= cap) {
          // Safety cap: stop writing, but do not wait for the slow consumer either.
          capped = true;
          break;
        }
        let chunk: Buffer;
        if (batching === "batched") {
          chunk = Buffer.allocUnsafe(perBatch * recordBytes);
          for (let r = 0; r < perBatch; r++) {
            (framed[(sent + r) & mask] as Buffer).copy(chunk, r * recordBytes);
            keySum = (keySum + ((sent + r) & mask)) | 0;
          }
          sent += perBatch;
        } else {
          chunk = framed[sent & mask] as Buffer;
          keySum = (keySum + (sent & mask)) | 0;
          sent++;
        }
        if (honourBackpressure && queued > QUEUED_HIGH_WATER_MARK) {
          await new Promise<void>((resolve) => socket.write(chunk, () => resolve()));
        } else {
          socket.write(chunk);
        }
        writes++;
      }
      if (capped) break;
      await yieldNow();
    }
    maxQueued = Math.max(maxQueued, socket.writableLength);
    const slowConsumer = this.params.consumerBytesPerSecond !== undefined;
    if (slowConsumer) {
      // Case 5 measures memory while the consumer is slow: hold the queue until the run's end.
      const left = end - performance.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      maxQueued = Math.max(maxQueued, socket.writableLength);
    } else {
      await new Promise<void>((resolve) => socket.end(resolve));
    }
    return {
      sent,
      keySum,
      elapsedMs: performance.now() - start,
      extra: { writes, maxQueuedBytes: maxQueued, capped },
    };
  }

  async cleanup(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    await this.cleanup();
  }
}

export class NetThroughputConsumer extends ConnectionConsumer<Socket> {
  protected destroy(socket: Socket): void {
    socket.destroy();
  }

  async connect(endpoint: unknown): Promise<void> {
    const { port } = endpoint as { port: number };
    const socket = await connect(port);
    this.connection = socket;
    const parser = new FramedRecordParser();
    const throttle = this.throttle(socket);
    const clock = new ArrivalClock();
    let chunks = 0;
    this.done = new Promise((resolve, reject) => {
      socket.on("data", (chunk: Buffer) => {
        chunks++;
        parser.push(chunk);
        clock.arrived(parser.count);
        throttle?.consumed(chunk.length);
      });
      socket.once("error", reject);
      socket.once("end", () => {
        throttle?.stop();
        resolve(clock.drained(parser.count, parser.keySum, { bytes: parser.bytes, chunks }));
      });
    });
  }
}

/**
 * Ping-pong over one socket: a framed record each way. The ponger listens and echoes every
 * complete frame; the pinger sends one and waits for it to come back.
 */
export class NetLatencyPeer implements LatencyPeer {
  private server: Server | undefined;
  private socket: Socket | undefined;
  private accepted: Promise<Socket> | undefined;
  private readonly record: Buffer;

  constructor(
    private readonly role: "pinger" | "ponger",
    params: LatencyParams,
  ) {
    this.record = makeFramedRecords(params.recordSize)[7] as Buffer;
  }

  async prepare(): Promise<unknown> {
    if (this.role === "pinger") return null;
    const server = createServer({ noDelay: true });
    this.server = server;
    this.accepted = new Promise((resolve) => server.once("connection", resolve));
    return { port: await listen(server) };
  }

  async connect(endpoint: unknown): Promise<void> {
    if (this.role === "ponger") return;
    this.socket = await connect((endpoint as { port: number }).port);
  }

  async serve(): Promise<{ echoed: number }> {
    const socket = await (this.accepted as Promise<Socket>);
    socket.setNoDelay(true);
    let echoed = 0;
    const frameLength = this.record.length;
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    return new Promise((resolve) => {
      socket.on("data", (chunk: Buffer) => {
        // Echo whole frames only (the pinger has one in flight, so a chunk is usually one frame).
        pending.push(chunk);
        pendingBytes += chunk.length;
        if (pendingBytes < frameLength) return;
        const all = pending.length === 1 ? (pending[0] as Buffer) : Buffer.concat(pending);
        const whole = all.length - (all.length % frameLength);
        socket.write(all.subarray(0, whole));
        echoed += whole / frameLength;
        const rest = all.subarray(whole);
        pending = rest.length > 0 ? [Buffer.from(rest)] : [];
        pendingBytes = rest.length;
      });
      socket.on("error", () => {});
      socket.once("close", () => resolve({ echoed }));
    });
  }

  async ping({ count }: { count: number }): Promise<PingResult> {
    const socket = this.socket as Socket;
    const frameLength = this.record.length;
    const trips = new RoundTrips();
    let received = 0;
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
      if (received >= frameLength && trips.awaiting) {
        received -= frameLength;
        trips.replied();
      }
    });
    const samples = await trips.time(count, () => socket.write(this.record));
    socket.end();
    return { samplesUs: samples };
  }

  async close(): Promise<void> {
    this.socket?.destroy();
    const server = this.server;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
