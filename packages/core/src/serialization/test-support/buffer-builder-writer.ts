import { IllegalStateError } from "../../errors.js";
import type { BufferBuilder } from "../../memory/buffer-builder.js";
import type { BufferConsumer } from "../../memory/buffer-consumer.js";
import type { NetworkBuffer } from "../../memory/network-buffer.js";

/**
 * Test support: plays the part of a subpartition writer. Appends framed records to BufferBuilders
 * (asking for a new one whenever the current one is full), and hands every finished buffer — the
 * consumer's `build()` slice, carrying one reference — to `onBuffer`. Builder and consumer are
 * closed right away, so the slice's reference is the only one left on the segment.
 */
export class BufferBuilderWriter {
  private builder: BufferBuilder | undefined;
  private consumer: BufferConsumer | undefined;
  /** Buffers handed to `onBuffer` so far. */
  buffersEmitted = 0;

  constructor(
    private readonly requestBuilder: () => BufferBuilder | undefined,
    private readonly onBuffer: (buffer: NetworkBuffer) => void,
  ) {}

  /** Appends `framed` (a record with its length prefix), spanning builders as needed. */
  write(framed: Uint8Array): void {
    let offset = 0;
    while (offset < framed.length) {
      let builder = this.builder;
      if (builder === undefined) {
        builder = this.requestBuilder();
        if (builder === undefined) throw new IllegalStateError("test pool ran out of buffers");
        this.builder = builder;
        this.consumer = builder.createBufferConsumer();
      }
      offset += builder.appendAndCommit(framed, offset, framed.length - offset);
      if (builder.isFull()) this.emit();
    }
  }

  /** Finishes the current (partly filled) builder and emits its buffer. */
  flush(): void {
    if (this.builder !== undefined) this.emit();
  }

  private emit(): void {
    const builder = this.builder as BufferBuilder;
    const consumer = this.consumer as BufferConsumer;
    this.builder = undefined;
    this.consumer = undefined;
    builder.finish();
    const buffer = consumer.build();
    consumer.close();
    builder.close();
    this.buffersEmitted++;
    this.onBuffer(buffer);
  }
}
