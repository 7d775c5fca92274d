import type { ServerResponse } from "node:http";

/** Options of {@link EventStreams}. */
export interface EventStreamsOptions {
  /** Streams served at once (`rest.event-streams.max`). */
  readonly max: number;
  /** How often each stream gets an event (`web.refresh-interval`). */
  readonly intervalMs: number;
  /**
   * A stream whose client took nothing for this long is closed
   * (`rest.event-streams.slow-client-timeout`).
   */
  readonly slowClientTimeoutMs: number;
  /** Bytes a stream sends before its connection is reset (`rest.event-streams.max-bytes`). */
  readonly maxBytes: number;
  /** The event of `key` now; `undefined` ends the key's streams (nothing more to say). */
  readonly eventOf: (key: string) => Promise<unknown>;
  /** A stream was dropped for not reading. */
  readonly onWarning: (message: string) => void;
}

interface Stream {
  readonly key: string;
  readonly response: ServerResponse;
  /** When the client last took an event whole (the socket took its last byte). */
  lastTakenAt: number;
  /** Bytes written to it. */
  written: number;
}

/** How long {@link EventStreams.close} waits for the last events to reach the clients. */
const FINAL_EVENT_FLUSH_MS = 1000;

/**
 * The REST endpoint's Server-Sent Event streams (the dashboard's live view of a job), bounded so
 * that no client can grow the job manager's memory or the kernel's:
 *
 * - at most `max` streams;
 * - each interval every stream gets its key's event, built once per key, unless its client has
 *   not taken the previous one yet (the socket still holds bytes of it): the stream skips this
 *   event, and the next carries the whole state again, so a slow reader only sees fewer
 *   updates. The job manager holds at most one event per stream; a stream whose client took
 *   nothing for `slowClientTimeoutMs` is reset.
 * - A stream's connection is reset once it sent `maxBytes`: the kernel accepts writes until its
 *   socket buffers (megabytes, growing) are full, so without this a client that never reads
 *   would make it hold that much for each stream. EventSource reconnects by itself (after the
 *   `retry` the stream announced) and gets the whole state at once.
 *
 * A reset (TCP RST) rather than a close lets the kernel drop what it still buffers for the
 * client; a closed socket would keep it until it gave up sending.
 */
export class EventStreams {
  private readonly streams = new Set<Stream>();
  private timer: NodeJS.Timeout | undefined;
  private ticking = false;
  private closed = false;
  private dropped = 0;
  private skipped = 0;

  constructor(private readonly options: EventStreamsOptions) {}

  /** Open streams. */
  get size(): number {
    return this.streams.size;
  }

  /** Streams reset because their client took nothing for the timeout, since the start. */
  get droppedCount(): number {
    return this.dropped;
  }

  /** Events skipped because a client had not taken the previous one, since the start. */
  get skippedCount(): number {
    return this.skipped;
  }

  /**
   * Serves `response` as a stream of `key`'s events, the first one now.
   *
   * @returns false (and leaves `response` alone) when `max` streams are open or it closed.
   */
  open(key: string, response: ServerResponse, first: unknown): boolean {
    if (this.closed || this.streams.size >= this.options.max) return false;
    response.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
    });
    response.write(`retry: ${this.options.intervalMs}\n\n`);
    const stream: Stream = { key, response, lastTakenAt: performance.now(), written: 0 };
    this.streams.add(stream);
    response.on("close", () => this.streams.delete(stream));
    this.send(stream, frame(first));
    this.timer ??= setInterval(() => void this.tick(), this.options.intervalMs).unref();
    return true;
  }

  /** Sends the streams of `key` their last event and ends them (the job ended). */
  finish(key: string, last: unknown): void {
    const data = frame(last);
    for (const stream of [...this.streams]) {
      if (stream.key === key) this.end(stream, data);
    }
  }

  /**
   * Sends every stream its key's event one last time and ends them (waiting at most a second
   * for them to reach their clients). Idempotent.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    const streams = [...this.streams];
    const events = new Map<string, string>();
    for (const stream of streams) {
      if (!events.has(stream.key)) {
        const event = await this.options.eventOf(stream.key).catch(() => undefined);
        events.set(stream.key, event === undefined ? "" : frame(event));
      }
    }
    const ended = streams.map(
      (stream) =>
        new Promise<void>((resolve) => {
          stream.response.once("close", resolve);
          this.end(stream, events.get(stream.key) ?? "");
        }),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all(ended),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, FINAL_EVENT_FLUSH_MS);
      }),
    ]);
    clearTimeout(timer);
    for (const stream of streams) if (!stream.response.destroyed) this.reset(stream);
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.closed) return;
    this.ticking = true;
    try {
      const keys = new Set([...this.streams].map((stream) => stream.key));
      for (const key of keys) {
        const event = await this.options.eventOf(key);
        if (this.closed) return;
        if (event === undefined) continue;
        const data = frame(event);
        for (const stream of [...this.streams]) {
          if (stream.key === key) this.send(stream, data);
        }
      }
      if (this.streams.size === 0) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    } finally {
      this.ticking = false;
    }
  }

  /** Writes `data` unless the client has not taken the previous event; drops a stalled one. */
  private send(stream: Stream, data: string): void {
    const { response } = stream;
    const now = performance.now();
    if (response.writableLength > 0) {
      this.skipped++;
      if (now - stream.lastTakenAt > this.options.slowClientTimeoutMs) {
        this.dropped++;
        this.reset(stream);
        this.options.onWarning(
          `closed an event stream of job ${stream.key} whose client took no event for ${Math.round(now - stream.lastTakenAt)} ms (rest.event-streams.slow-client-timeout)`,
        );
      }
      return;
    }
    stream.lastTakenAt = now;
    stream.written += Buffer.byteLength(data);
    response.write(data, () => {
      stream.lastTakenAt = performance.now();
    });
    if (stream.written >= this.options.maxBytes) this.reset(stream);
  }

  /** Resets the stream's connection (the client reconnects), dropping what the kernel holds. */
  private reset(stream: Stream): void {
    this.streams.delete(stream);
    const socket = stream.response.socket;
    if (socket !== null && typeof socket.resetAndDestroy === "function") socket.resetAndDestroy();
    else stream.response.destroy();
  }

  private end(stream: Stream, data: string): void {
    this.streams.delete(stream);
    // A client that does not read would keep the last event in memory: it gets none.
    if (stream.response.writableLength > 0) {
      this.reset(stream);
      return;
    }
    stream.response.end(data);
  }
}

function frame(event: unknown): string {
  return `data: ${JSON.stringify(event)}\n\n`;
}
