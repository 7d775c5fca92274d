/**
 * Raw `ws` baselines, data flowing server → client (unmasked, as the WS plugin sends):
 * `per-record` sends one binary message per record (the message is the record); `batched` sends
 * 32 KiB messages of length-prefixed records. `ws.send()` hides socket backpressure (ws#2009), so
 * the producer watches `bufferedAmount`: above the high-water mark it sends the next message with
 * a callback and waits for it (everything queued before it has then been written). Case 5 ignores
 * backpressure, bounded only by a safety cap.
 */
import { WebSocket, WebSocketServer } from "ws";
import { FramedRecordParser, makeFramedRecords, makeKeyedRecords } from "../records.js";
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
/** The WS plugin's default high-water mark (`taskmanager.network.websocket.high-water-mark`). */
const HIGH_WATER_MARK = 1024 * 1024;

/** A framed record's length: the 4-byte length prefix and the payload. */
function framedLength(recordSize: number): number {
  return recordSize + 4;
}

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function startServer(): Promise<{ server: WebSocketServer; port: number }> {
  return new Promise((resolve, reject) => {
    const server = new WebSocketServer({
      host: "127.0.0.1",
      port: 0,
      perMessageDeflate: false,
      maxPayload: 64 << 20,
    });
    server.once("error", reject);
    server.once("listening", () => {
      const address = server.address();
      resolve({ server, port: typeof address === "object" && address !== null ? address.port : 0 });
    });
  });
}

function connectClient(port: number): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/`, {
      perMessageDeflate: false,
      maxPayload: 64 << 20,
    });
    ws.binaryType = "nodebuffer";
    ws.once("open", () => {
      ws.off("error", reject);
      resolve(ws);
    });
    ws.once("error", reject);
  });
}

function closeServer(server: WebSocketServer): Promise<void> {
  for (const client of server.clients) client.terminate();
  return new Promise((resolve) => server.close(() => resolve()));
}

export class WsThroughputProducer implements ThroughputProducer {
  private server: WebSocketServer | undefined;
  private socket: Promise<WebSocket> | undefined;
  private readonly records: Uint8Array[];
  private readonly framed: Buffer[];

  constructor(private readonly params: ThroughputParams) {
    this.records = makeKeyedRecords(params.recordSize).map((r) => r.bytes);
    // Framed copies only when records are packed into messages (they are 32 MiB for 32 KiB records).
    this.framed = params.batching === "batched" ? makeFramedRecords(params.recordSize) : [];
  }

  async prepare(): Promise<unknown> {
    const { server, port } = await startServer();
    this.server = server;
    this.socket = new Promise((resolve) => server.once("connection", (ws) => resolve(ws)));
    return { port };
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const ws = await (this.socket as Promise<WebSocket>);
    ws.on("error", () => {});
    const { honourBackpressure, batching } = this.params;
    const cap = this.params.queuedCapBytes ?? Number.POSITIVE_INFINITY;
    const records = this.records;
    const framed = this.framed;
    const mask = records.length - 1;
    const recordBytes = framedLength(this.params.recordSize);
    const perBatch = Math.max(1, Math.floor(BATCH_BYTES / recordBytes));
    const start = performance.now();
    const end = start + durationMs;
    let sent = 0;
    let keySum = 0;
    let messages = 0;
    let maxQueued = 0;
    let capped = false;
    const waitWritten = (message: Uint8Array) =>
      new Promise<void>((resolve) => ws.send(message, { binary: true }, () => resolve()));
    while (performance.now() < end && ws.readyState === WebSocket.OPEN) {
      for (let m = 0; m < 16; m++) {
        let message: Uint8Array;
        if (batching === "batched") {
          const out = Buffer.allocUnsafe(perBatch * recordBytes);
          for (let r = 0; r < perBatch; r++) {
            (framed[(sent + r) & mask] as Buffer).copy(out, r * recordBytes);
            keySum = (keySum + ((sent + r) & mask)) | 0;
          }
          sent += perBatch;
          message = out;
        } else {
          message = records[sent & mask] as Uint8Array;
          keySum = (keySum + (sent & mask)) | 0;
          sent++;
        }
        messages++;
        const queued = ws.bufferedAmount;
        if (queued > maxQueued) maxQueued = queued;
        if (!honourBackpressure && queued > cap) {
          // Safety cap: stop sending, but do not wait for the slow consumer either.
          capped = true;
          break;
        }
        if (honourBackpressure && queued > HIGH_WATER_MARK) await waitWritten(message);
        else ws.send(message, { binary: true });
      }
      if (capped) break;
      await yieldNow();
    }
    maxQueued = Math.max(maxQueued, ws.bufferedAmount);
    if (this.params.consumerBytesPerSecond !== undefined) {
      // Case 5 measures memory while the consumer is slow: hold the queue until the run's end.
      const left = end - performance.now();
      if (left > 0) await new Promise((resolve) => setTimeout(resolve, left));
      maxQueued = Math.max(maxQueued, ws.bufferedAmount);
    } else {
      await new Promise<void>((resolve) => {
        ws.once("close", () => resolve());
        ws.close(1000);
      });
    }
    return {
      sent,
      keySum,
      elapsedMs: performance.now() - start,
      extra: { messages, maxQueuedBytes: maxQueued, capped },
    };
  }

  async cleanup(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await closeServer(server);
  }

  async close(): Promise<void> {
    await this.cleanup();
  }
}

export class WsThroughputConsumer extends ConnectionConsumer<WebSocket> {
  protected destroy(ws: WebSocket): void {
    ws.terminate();
  }

  async connect(endpoint: unknown): Promise<void> {
    const ws = await connectClient((endpoint as { port: number }).port);
    this.connection = ws;
    const batched = this.params.batching === "batched";
    const parser = new FramedRecordParser();
    const throttle = this.throttle(ws);
    let count = 0;
    let keySum = 0;
    let bytes = 0;
    const clock = new ArrivalClock();
    this.done = new Promise((resolve, reject) => {
      ws.on("message", (data: Buffer) => {
        if (batched) {
          parser.push(data);
          count = parser.count;
        } else {
          count++;
          bytes += data.length;
          keySum = (keySum + data.readInt32BE(0)) | 0;
        }
        clock.arrived(count);
        throttle?.consumed(data.length);
      });
      ws.once("error", reject);
      ws.once("close", () => {
        throttle?.stop();
        resolve(
          clock.drained(count, batched ? parser.keySum : keySum, {
            bytes: batched ? parser.bytes : bytes,
          }),
        );
      });
    });
  }
}

/** Ping-pong: the ponger is the server and echoes each message; the pinger (client) times it. */
export class WsLatencyPeer implements LatencyPeer {
  private server: WebSocketServer | undefined;
  private accepted: Promise<WebSocket> | undefined;
  private ws: WebSocket | undefined;
  private readonly record: Uint8Array;

  constructor(
    private readonly role: "pinger" | "ponger",
    params: LatencyParams,
  ) {
    this.record = (makeKeyedRecords(params.recordSize)[7] as { bytes: Uint8Array }).bytes;
  }

  async prepare(): Promise<unknown> {
    if (this.role === "pinger") return null;
    const { server, port } = await startServer();
    this.server = server;
    this.accepted = new Promise((resolve) => server.once("connection", (ws) => resolve(ws)));
    return { port };
  }

  async connect(endpoint: unknown): Promise<void> {
    if (this.role === "ponger") return;
    this.ws = await connectClient((endpoint as { port: number }).port);
  }

  async serve(): Promise<{ echoed: number }> {
    const ws = await (this.accepted as Promise<WebSocket>);
    let echoed = 0;
    return new Promise((resolve) => {
      ws.on("message", (data: Buffer) => {
        ws.send(data, { binary: true });
        echoed++;
      });
      ws.on("error", () => {});
      ws.once("close", () => resolve({ echoed }));
    });
  }

  async ping({ count }: { count: number }): Promise<PingResult> {
    const ws = this.ws as WebSocket;
    const trips = new RoundTrips();
    ws.on("message", () => trips.replied());
    const samples = await trips.time(count, () => ws.send(this.record, { binary: true }));
    await new Promise<void>((resolve) => {
      ws.once("close", () => resolve());
      ws.close(1000);
    });
    return { samplesUs: samples };
  }

  async close(): Promise<void> {
    this.ws?.terminate();
    const server = this.server;
    if (server !== undefined) await closeServer(server);
  }
}
