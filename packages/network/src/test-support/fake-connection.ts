import type { ConnectionHandler, TransportConnection } from "../netty/transport/transport.js";

/**
 * A TransportConnection that records what is written to it; the test decides when it is
 * writable, when writes complete, and feeds the handler's `onData`/`onDrain`/`onClose` itself.
 */
export class FakeConnection implements TransportConnection {
  readonly remoteAddress: string;
  writable = true;
  /** After this many more writes, `write()` returns false and the connection stays unwritable. */
  writesUntilFull = Number.POSITIVE_INFINITY;
  readonly writes: Buffer[] = [];
  handler: ConnectionHandler | undefined;
  paused = false;
  closed = false;
  destroyedWith: Error | undefined;
  destroyed = false;
  /** Writes per outermost cork()…uncork() span, in order (writes outside a span are not listed). */
  readonly corkedBatches: number[] = [];
  private corkDepth = 0;
  private writesInBatch = 0;
  private readonly pending: ((error?: Error | null) => void)[] = [];

  constructor(remoteAddress = "10.0.0.2:40000") {
    this.remoteAddress = remoteAddress;
  }

  setHandler(handler: ConnectionHandler): void {
    this.handler = handler;
  }

  write(chunks: readonly Uint8Array[], onWritten?: (error?: Error | null) => void): boolean {
    // Copy now: the queue may recycle the payload once `onWritten` runs.
    this.writes.push(Buffer.concat(chunks.map((c) => Buffer.from(c))));
    if (onWritten !== undefined) this.pending.push(onWritten);
    if (this.corkDepth > 0) this.writesInBatch++;
    if (--this.writesUntilFull <= 0) this.writable = false;
    return this.writable;
  }

  cork(): void {
    if (this.corkDepth++ === 0) this.writesInBatch = 0;
  }

  uncork(): void {
    if (this.corkDepth === 0) throw new Error("uncork() without cork()");
    if (--this.corkDepth === 0 && this.writesInBatch > 0)
      this.corkedBatches.push(this.writesInBatch);
  }

  isWritable(): boolean {
    return this.writable && !this.closed && !this.destroyed;
  }

  /** Bytes written and not yet taken by the test. */
  writtenBytes(): number {
    let bytes = 0;
    for (const chunk of this.writes) bytes += chunk.length;
    return bytes;
  }

  /** The transport finished the writes: their buffers may be recycled. */
  completeWrites(): void {
    for (const done of this.pending.splice(0)) done();
  }

  /** The peer read everything: writable again, and the handler hears `onDrain`. */
  drain(): void {
    this.writable = true;
    this.writesUntilFull = Number.POSITIVE_INFINITY;
    this.completeWrites();
    this.handler?.onDrain();
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  close(): void {
    if (this.closed || this.destroyed) return;
    this.closed = true;
    // Real transports report the close on a later turn, never from inside close().
    queueMicrotask(() => this.handler?.onClose(undefined));
  }

  destroy(cause?: Error): void {
    if (this.closed || this.destroyed) return;
    this.destroyed = true;
    this.destroyedWith = cause;
    queueMicrotask(() => this.handler?.onClose(cause));
  }
}
