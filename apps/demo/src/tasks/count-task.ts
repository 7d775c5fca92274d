import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { StringSerializer } from "@sluice/core";
import { PollStatus, RecordReader } from "@sluice/runtime";
import type { InputGate } from "@sluice/runtime-api";
import type { TaskProgress } from "../ipc-messages.js";

/** Records delivered per synchronous poll before the task yields to the event loop. */
const RECORDS_PER_POLL = 8192;

/**
 * Count subtask: reads the words of its key groups from every source subtask (local channels
 * for sources on the same task manager, remote ones over the transport) and keeps running
 * counts. Polls synchronously in batches and awaits the gate only when nothing is available.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
  private readonly reader: RecordReader<string>;
  private records = 0;
  private finished = false;
  private cancelled: Error | undefined;

  constructor(
    readonly name: string,
    readonly subtaskIndex: number,
    private readonly gate: InputGate,
  ) {
    this.reader = new RecordReader(gate, StringSerializer.INSTANCE);
  }

  /** Reads until every channel delivered EndOfPartition. */
  async run(): Promise<void> {
    const counts = this.counts;
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      this.records++;
    };
    try {
      for (;;) {
        const status = this.reader.pollRecords(onWord, RECORDS_PER_POLL);
        if (status === PollStatus.END_OF_INPUT) break;
        if (status === PollStatus.NOTHING_AVAILABLE) await this.reader.getAvailableFuture();
        else await yieldToEventLoop();
        if (this.cancelled !== undefined) throw this.cancelled;
      }
      this.finished = true;
    } finally {
      this.reader.close();
    }
  }

  /** Stops reading at the next poll; the owner then closes the gate. */
  cancel(cause: Error): void {
    this.cancelled = cause;
  }

  progress(): TaskProgress {
    const metrics = this.gate.metrics;
    return {
      name: this.name,
      kind: "count",
      subtaskIndex: this.subtaskIndex,
      records: this.records,
      bytes: metrics.numBytesIn,
      poolUsage: metrics.inPoolUsage(),
      backPressuredTimeMs: 0,
      finished: this.finished,
    };
  }
}
