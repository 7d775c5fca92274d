import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import type { Task } from "@sluice/runtime";
import { type CorpusPartition, tokenize } from "../corpus.js";
import { taskProgressOfTask } from "../task-metrics.js";
import type { TaskProgress } from "../task-progress.js";
import { RatePacer } from "../throttle.js";

/** Records emitted between two yields to the event loop (timers, socket I/O, credit). */
const RECORDS_PER_YIELD = 4096;

/**
 * Source subtask: generates its share of the corpus, tokenizes each line into words and emits
 * every word through the task's writer, which the job graph keys by word (Flink's `keyBy(word)`),
 * so all occurrences of a word reach the one count subtask that owns its key group.
 *
 * The loop is synchronous while the partition accepts records; it awaits only when the writer
 * reports back-pressure, and yields with setImmediate every few thousand records so the output
 * flusher, incoming credit and other channels get their turn. The task finishes the partition
 * when {@link run} returns. With a pace (`--duration`) it emits at most that many words per
 * second, so the job lasts long enough to be watched.
 */
export class SourceTask {
  private records = 0;
  private finished = false;
  private readonly pacer: RatePacer;

  /** @param pace words per second this subtask emits at most (`undefined`: no limit). */
  constructor(
    private readonly task: Task,
    private readonly corpus: CorpusPartition,
    pace?: number,
  ) {
    this.pacer = new RatePacer(() => pace);
  }

  /** Emits the whole share; resolves with the number of words emitted. */
  async run(): Promise<number> {
    const { task } = this;
    const writer = task.writer<string>();
    const words: string[] = [];
    const collect = (word: string) => {
      words.push(word);
    };
    let sinceYield = 0;
    for (let line = this.corpus.nextLine(); line !== undefined; line = this.corpus.nextLine()) {
      words.length = 0;
      tokenize(line, collect);
      for (const word of words) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emit(word);
      }
      this.records += words.length;
      sinceYield += words.length;
      if (sinceYield >= this.pacer.batchSize(RECORDS_PER_YIELD)) {
        await this.pacer.pace(sinceYield, task.signal);
        sinceYield = 0;
        await yieldToEventLoop();
        task.signal.throwIfAborted();
      }
    }
    this.finished = true;
    return this.records;
  }

  /** Its counters, from its metrics (`numRecordsOut`, `numBytesOut`, `outPoolUsage`). */
  progress(): TaskProgress {
    return taskProgressOfTask(this.task, this.finished);
  }
}
