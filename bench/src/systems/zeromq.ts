/**
 * zeromq.js (`zeromq`, libzmq through its bundled native addon): a PUSH socket in the producer
 * bound on 127.0.0.1, a PULL socket in the consumer connected to it. `per-record` sends one
 * message per framed record (as a user of ZeroMQ's message API would); `batched` packs whole
 * framed records into 32 KiB messages by hand, like the raw batched baseline. The consumer parses
 * the framed records of every message. An empty message ends the run.
 *
 * Backpressure is ZeroMQ's own: `send()` resolves once libzmq took the message, and waits while
 * the send high-water mark (messages queued for the peer) is reached. zeromq.js allows one send in
 * flight per socket, so every send is awaited.
 */
import { Pull, Push } from "zeromq";
import { FramedRecordParser, makeFramedRecords } from "../records.js";
import type { ProduceResult, ThroughputParams, ThroughputProducer } from "../roles.js";
import { ArrivalClock } from "./arrival-clock.js";
import { ConnectionConsumer } from "./connection-consumer.js";

const BATCH_BYTES = 32 * 1024;
/** How long closing a socket may still send what it queued (ms). */
const LINGER_MS = 5_000;
/** The end-of-run message: a framed record is never empty (it has its length prefix). */
const END = Buffer.alloc(0);

function yieldNow(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class ZeromqThroughputProducer implements ThroughputProducer {
  private socket: Push | undefined;
  private readonly framed: Buffer[];

  constructor(private readonly params: ThroughputParams) {
    this.framed = makeFramedRecords(params.recordSize);
  }

  async prepare(): Promise<unknown> {
    const socket = new Push({ linger: LINGER_MS });
    this.socket = socket;
    await socket.bind("tcp://127.0.0.1:*");
    return { endpoint: socket.lastEndpoint };
  }

  async produce({ durationMs }: { durationMs: number }): Promise<ProduceResult> {
    const socket = this.socket as Push;
    const framed = this.framed;
    const mask = framed.length - 1;
    const recordBytes = (framed[0] as Buffer).length;
    const batched = this.params.batching === "batched";
    const perBatch = Math.max(1, Math.floor(BATCH_BYTES / recordBytes));
    const start = performance.now();
    const end = start + durationMs;
    let sent = 0;
    let keySum = 0;
    let messages = 0;
    while (performance.now() < end) {
      for (let m = 0; m < 64; m++) {
        if (batched) {
          const chunk = Buffer.allocUnsafe(perBatch * recordBytes);
          for (let r = 0; r < perBatch; r++) {
            (framed[(sent + r) & mask] as Buffer).copy(chunk, r * recordBytes);
            keySum = (keySum + ((sent + r) & mask)) | 0;
          }
          sent += perBatch;
          await socket.send(chunk);
        } else {
          keySum = (keySum + (sent & mask)) | 0;
          await socket.send(framed[sent & mask] as Buffer);
          sent++;
        }
        messages++;
      }
      // Sends that resolve at once never leave the microtask queue: let I/O and timers run.
      await yieldNow();
    }
    await socket.send(END);
    return { sent, keySum, elapsedMs: performance.now() - start, extra: { messages } };
  }

  async cleanup(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    socket?.close();
  }

  async close(): Promise<void> {
    await this.cleanup();
  }
}

export class ZeromqThroughputConsumer extends ConnectionConsumer<Pull> {
  protected destroy(socket: Pull): void {
    socket.close();
  }

  async connect(endpoint: unknown): Promise<void> {
    const socket = new Pull({ linger: 0 });
    socket.connect((endpoint as { endpoint: string }).endpoint);
    this.connection = socket;
    const parser = new FramedRecordParser();
    const clock = new ArrivalClock();
    this.done = (async () => {
      let messages = 0;
      for (;;) {
        const [message] = await socket.receive();
        if (message === undefined || message.length === 0) break;
        messages++;
        parser.push(message);
        clock.arrived(parser.count);
      }
      return clock.drained(parser.count, parser.keySum, { bytes: parser.bytes, messages });
    })();
    // Awaited by drain(); a receive cut off by cleanup must not be an unhandled rejection.
    this.done.catch(() => {});
  }
}
