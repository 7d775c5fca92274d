import { asError } from "../util/as-error.js";

/**
 * Flushes a writer's partition every `timeoutMs` (Flink's OutputFlusher, `execution.buffer-timeout`),
 * so a slow source still delivers partly filled buffers within the timeout. It runs on the event
 * loop's timer queue; the timer is unref'd, since an idle flusher alone must not keep a process
 * alive. An error is kept and rethrown to the writer on its next emit.
 */
export class OutputFlusher {
  private readonly timer: NodeJS.Timeout;
  private error: Error | undefined;
  private stopped = false;

  constructor(
    readonly name: string,
    timeoutMs: number,
    flush: () => void,
  ) {
    this.timer = setInterval(() => {
      if (this.stopped || this.error !== undefined) return;
      try {
        flush();
      } catch (error) {
        this.error = asError(error);
      }
    }, timeoutMs);
    this.timer.unref();
  }

  /** The error the last flush threw, if any. */
  getError(): Error | undefined {
    return this.error;
  }

  /** Stops the timer. Idempotent. */
  stop(): void {
    this.stopped = true;
    clearInterval(this.timer);
  }
}
