/** Size of the buffer a client socket's reads land in: Node's own read size for stream sockets. */
export const READ_BUFFER_BYTES = 64 * 1024;

/** Receives one read; `chunk` is valid only during the call. */
export type ReadHandler = (chunk: Buffer) => void;

/**
 * The memory a plaintext client socket reads into, reused for every read (pass {@link onread}
 * to `net.connect`), instead of the fresh 64 KiB Buffer Node allocates per read. At hundreds of
 * MB/s those per-read buffers were the consumer's main garbage: a shuffle of 32 KiB records
 * measured 0.26–0.29× raw `net` with them and 0.86–0.91× with this one (docs/benchmarks.md,
 * case 3).
 *
 * Each read goes to the current {@link ReadHandler}, which must copy what it keeps before it
 * returns: the next read overwrites the memory. The protocol decoder copies payloads into
 * credited buffers and keeps no chunk, so it can read from here directly.
 */
export class ReusedReadBuffer {
  /** The memory every read lands in. */
  readonly buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private handler: ReadHandler;

  /** @param handler - receives the reads until {@link setHandler} replaces it. */
  constructor(handler: ReadHandler) {
    this.handler = handler;
  }

  /** Node's `onread` callback: hands the read bytes on and keeps reading. */
  private readonly callback = (bytesRead: number, buffer: Uint8Array): boolean => {
    this.handler((buffer as Buffer).subarray(0, bytesRead));
    return true;
  };

  /** The `onread` option of `net.connect` that reads into this buffer. */
  get onread(): { buffer: Buffer; callback: (bytesRead: number, buffer: Uint8Array) => boolean } {
    return { buffer: this.buffer, callback: this.callback };
  }

  /** Hands every later read to `handler`. */
  setHandler(handler: ReadHandler): void {
    this.handler = handler;
  }
}
