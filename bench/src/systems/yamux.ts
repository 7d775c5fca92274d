/**
 * `@chainsafe/libp2p-yamux` over one `node:net` socket: the producer opens one yamux stream and
 * sends one message per record (a framed record, as the raw per-record baseline writes it); the
 * consumer parses the stream's messages like the raw baselines. Only the muxer is measured, no
 * libp2p node (no encryption, no peer routing): the yamux frames, windows and the library's own
 * buffering. The producer honours backpressure (`send()` false → `onDrain()`).
 *
 * The library's message streams use `Promise.withResolvers` (Node 22); on Node 20 this module
 * installs the standard three-line equivalent before the library runs.
 */
import { once } from "node:events";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { yamux } from "@chainsafe/libp2p-yamux";
import type { Logger, MessageStreamDirection, Stream, StreamMuxer } from "@libp2p/interface";
import { AbstractMessageStream, type SendResult } from "@libp2p/utils";
import { FramedRecordParser, makeFramedRecords } from "../records.js";
import type { ProduceResult, ThroughputParams, ThroughputProducer } from "../roles.js";
import { ArrivalClock } from "./arrival-clock.js";
import { ConnectionConsumer } from "./connection-consumer.js";
import { SOCKET_HIGH_WATER_MARK } from "./raw-net.js";

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== "function") {
  Object.assign(Promise, {
    withResolvers<T>() {
      let resolve!: (value: T) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

/** What the library hands `sendData`: a list of chunks. */
type ChunkList = Parameters<AbstractMessageStream["sendData"]>[0];

/** A logger that logs nothing (the library logs through it on hot paths). */
const silent: Logger = Object.assign(() => {}, {
  enabled: false,
  error: () => {},
  trace: () => {},
  newScope: () => silent,
}) as unknown as Logger;

/** A node:net socket as the message stream yamux runs over. */
class SocketMessageStream extends AbstractMessageStream {
  constructor(
    private readonly socket: Socket,
    direction: MessageStreamDirection,
  ) {
    super({ log: silent, direction });
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => this.safeDispatchEvent("drain"));
    socket.on("error", () => {});
    socket.once("close", () => this.onTransportClosed());
  }

  sendData(data: ChunkList): SendResult {
    let canSendMore = true;
    for (const chunk of data) canSendMore = this.socket.write(chunk);
    return { sentBytes: data.byteLength, canSendMore };
  }

  sendReset(): void {
    this.socket.destroy();
  }

  sendPause(): void {
    this.socket.pause();
  }

  sendResume(): void {
    this.socket.resume();
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.socket.end(resolve));
  }
}

function muxerOver(socket: Socket, direction: MessageStreamDirection): StreamMuxer {
  return yamux()().createStreamMuxer(new SocketMessageStream(socket, direction));
}

/** How long the producer waits for its stream to close after a run. */
const CLOSE_TIMEOUT_MS = 5_000;

/**
 * Whether `wait` (given `deadline`) completed before the deadline aborted it: false once it
 * aborted, its own error otherwise.
 */
async function beforeDeadline(
  wait: (options: { signal: AbortSignal }) => Promise<void>,
  deadline: AbortSignal,
): Promise<boolean> {
  try {
    await wait({ signal: deadline });
    return true;
  } catch (error) {
    if (deadline.aborted) return false;
    throw error;
  }
}

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class YamuxThroughputProducer implements ThroughputProducer {
  private server: Server | undefined;
  private socket: Promise<Socket> | undefined;
  /** The last run's socket, open until cleanup. */
  private open: Socket | undefined;
  private readonly framed: Buffer[];

  constructor(params: ThroughputParams) {
    this.framed = makeFramedRecords(params.recordSize);
  }

  async prepare(): Promise<unknown> {
    const server = createServer({ noDelay: true, highWaterMark: SOCKET_HIGH_WATER_MARK });
    this.server = server;
    this.socket = once(server, "connection").then(([socket]) => socket as Socket);
    // Awaited by produce(); until then a server error must not be an unhandled rejection.
    this.socket.catch(() => {});
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const address = server.address();
    return { port: typeof address === "object" && address !== null ? address.port : 0 };
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const socket = await (this.socket as Promise<Socket>);
    const muxer = muxerOver(socket, "inbound");
    const stream = await muxer.createStream();
    const framed = this.framed;
    const mask = framed.length - 1;
    const start = performance.now();
    const end = start + durationMs;
    // Bounds every drain wait: a drain that never comes ends the run (the consumer's count then
    // tells what arrived) instead of hanging the bench.
    const runEnd = AbortSignal.timeout(durationMs);
    let sent = 0;
    let keySum = 0;
    let waits = 0;
    let stalled = false;
    while (!stalled && performance.now() < end && stream.status === "open") {
      for (let i = 0; i < 64; i++) {
        const ok = stream.send(framed[sent & mask] as Buffer);
        keySum = (keySum + (sent & mask)) | 0;
        sent++;
        if (!ok) {
          waits++;
          const left = end - performance.now();
          if (left <= 0 || !(await beforeDeadline((o) => stream.onDrain(o), runEnd))) {
            stalled = true;
            break;
          }
        }
      }
      await yieldNow();
    }
    // Ends the stream once its buffered messages are sent; the socket stays open until cleanup,
    // since closing it here can cut off messages still waiting for the peer's window update.
    // Bounded like the drain waits: a close that never completes aborts the stream (the
    // consumer then reports what arrived) instead of hanging the bench.
    const closed = await beforeDeadline(
      (o) => stream.close(o),
      AbortSignal.timeout(CLOSE_TIMEOUT_MS),
    );
    if (!closed) {
      stalled = true;
      stream.abort(new Error("yamux stream did not close in time"));
    }
    this.open = socket;
    return {
      sent,
      keySum,
      elapsedMs: performance.now() - start,
      extra: { drainWaits: waits, stalled },
    };
  }

  async cleanup(): Promise<void> {
    this.open?.destroy();
    this.open = undefined;
    const server = this.server;
    this.server = undefined;
    if (server !== undefined) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async close(): Promise<void> {
    await this.cleanup();
  }
}

export class YamuxThroughputConsumer extends ConnectionConsumer<Socket> {
  protected destroy(socket: Socket): void {
    socket.destroy();
  }

  async connect(endpoint: unknown): Promise<void> {
    const { port } = endpoint as { port: number };
    const socket = createConnection({ host: "127.0.0.1", port, noDelay: true });
    await once(socket, "connect");
    this.connection = socket;
    const muxer = muxerOver(socket, "outbound");
    const parser = new FramedRecordParser();
    const clock = new ArrivalClock();
    let messages = 0;
    this.done = new Promise((resolve, reject) => {
      socket.once("error", reject);
      muxer.addEventListener("stream", (event) => {
        const stream: Stream = event.detail;
        stream.addEventListener("message", (message) => {
          messages++;
          parser.push(message.data.subarray());
          clock.arrived(parser.count);
        });
        stream.addEventListener("close", (closed) => {
          if (closed.error !== undefined) reject(closed.error);
        });
        stream.addEventListener("remoteCloseWrite", () =>
          resolve(clock.drained(parser.count, parser.keySum, { bytes: parser.bytes, messages })),
        );
      });
    });
  }
}
