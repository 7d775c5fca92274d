import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { StringSerializer } from "@sluice/core";
import {
  type BufferTimeout,
  createRecordWriter,
  KeyGroupStreamPartitioner,
  type RecordWriter,
} from "@sluice/runtime";
import type { ResultPartitionWriter } from "@sluice/runtime-api";
import { type CorpusPartition, tokenize } from "../corpus.js";
import type { TaskProgress } from "../ipc-messages.js";

/** Records emitted between two yields to the event loop (timers, socket I/O, credit). */
const RECORDS_PER_YIELD = 4096;

/**
 * Source subtask: generates its share of the corpus, tokenizes each line into words and sends
 * every word through the key-group hash exchange (Flink's `keyBy(word)`), so all occurrences of
 * a word reach the one count subtask that owns its key group.
 *
 * The loop is synchronous while the partition accepts records; it awaits only when the writer
 * reports back-pressure, and yields with setImmediate every few thousand records so the output
 * flusher, incoming credit and other channels get their turn.
 */
export class SourceTask {
  private readonly writer: RecordWriter<string>;
  private records = 0;
  private finished = false;
  private cancelled: Error | undefined;

  constructor(
    readonly name: string,
    readonly subtaskIndex: number,
    private readonly partition: ResultPartitionWriter,
    private readonly corpus: CorpusPartition,
    maxParallelism: number,
    bufferTimeout: BufferTimeout,
  ) {
    this.writer = createRecordWriter(
      partition,
      StringSerializer.INSTANCE,
      new KeyGroupStreamPartitioner<string, string>((word) => word, maxParallelism),
      { taskName: name, bufferTimeout },
    );
  }

  /** Emits the whole share, then finishes the partition (EndOfPartition to every consumer). */
  async run(): Promise<void> {
    const writer = this.writer;
    const words: string[] = [];
    const collect = (word: string) => {
      words.push(word);
    };
    let sinceYield = 0;
    try {
      for (let line = this.corpus.nextLine(); line !== undefined; line = this.corpus.nextLine()) {
        words.length = 0;
        tokenize(line, collect);
        for (const word of words) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(word);
        }
        this.records += words.length;
        sinceYield += words.length;
        if (sinceYield >= RECORDS_PER_YIELD) {
          sinceYield = 0;
          await yieldToEventLoop();
          if (this.cancelled !== undefined) throw this.cancelled;
        }
      }
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      this.partition.finish();
      this.finished = true;
    } finally {
      writer.close();
    }
  }

  /** Stops the loop at its next line; the owner then fails and closes the partition. */
  cancel(cause: Error): void {
    this.cancelled = cause;
  }

  progress(): TaskProgress {
    const metrics = this.partition.metrics;
    return {
      name: this.name,
      kind: "source",
      subtaskIndex: this.subtaskIndex,
      records: this.records,
      bytes: metrics.numBytesOut,
      poolUsage: metrics.outPoolUsage(),
      backPressuredTimeMs: metrics.backPressuredTimeMs,
      finished: this.finished,
    };
  }
}
