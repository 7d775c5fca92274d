import { IllegalStateError } from "@sluice/core";
import { type CorpusPartition, tokenize } from "@sluice/corpus";
import type { Task } from "@sluice/runtime";
import * as z from "zod";
import { taskProgressOfTask } from "../task-metrics.js";
import type { TaskProgress } from "../task-progress.js";
import { RatePacer } from "../throttle.js";

/** Records emitted between two yields to the event loop (timers, socket I/O, credit). */
const RECORDS_PER_YIELD = 4096;

/**
 * A source subtask's checkpointed state: how many lines of its share it emitted (its offset) and
 * how many words they held.
 */
export const SourceStateSchema = z.object({
  lines: z.int().min(0),
  records: z.int().min(0),
});

/** A source subtask's checkpointed state. */
export type SourceState = z.output<typeof SourceStateSchema>;

/**
 * Source subtask: generates its share of the corpus, tokenizes each line into words and emits
 * every word through the task's writer, which the job graph keys by word (Flink's `keyBy(word)`),
 * so all occurrences of a word reach the one count subtask that owns its key group.
 *
 * The loop is synchronous while the partition accepts records; it awaits only when the writer
 * reports back-pressure, and yields every few thousand records so the output flusher, incoming
 * credit, other channels and checkpoint triggers get their turn. The task finishes the partition
 * when {@link run} returns. With a pace (`--duration`) it emits at most that many words per
 * second, so the job lasts long enough to be watched.
 *
 * With checkpoints, its state is its offset in lines: it runs its mail (checkpoint triggers) only
 * between two lines, so a snapshot covers exactly the words emitted before the barrier, and a
 * restored attempt skips that many lines and goes on from there.
 */
export class SourceTask {
  /** Words emitted, with those of the checkpoint it was restored from (its state). */
  private records = 0;
  /** Words the checkpoint it was restored from had emitted (0 for a first attempt). */
  private restoredRecords = 0;
  private lines = 0;
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

  /** Emits the whole share (the rest of it, when restored); resolves with the words emitted. */
  async run(): Promise<number> {
    const { task } = this;
    this.restore();
    task.setCheckpointHandler({
      snapshotState: () => ({ lines: this.lines, records: this.records }) satisfies SourceState,
    });
    const writer = task.writer<string>();
    const words: string[] = [];
    let sinceYield = 0;
    for (let line = this.corpus.nextLine(); line !== undefined; line = this.corpus.nextLine()) {
      words.length = 0;
      tokenize(line, words);
      // No mail within a line: a checkpoint there would cut it in two.
      for (const word of words) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emit(word);
      }
      this.records += words.length;
      this.lines++;
      task.processMail();
      sinceYield += words.length;
      if (sinceYield >= this.pacer.batchSize(RECORDS_PER_YIELD)) {
        await this.pacer.pace(sinceYield, task.signal);
        sinceYield = 0;
        await task.yieldToMailbox();
        task.signal.throwIfAborted();
      }
    }
    this.finished = true;
    return this.records;
  }

  /** A restored attempt seeks to the offset of the checkpoint it was restored from. */
  private restore(): void {
    const { task } = this;
    if (task.restoredState === undefined) return;
    const parsed = SourceStateSchema.safeParse(task.restoredState);
    if (!parsed.success) {
      throw new IllegalStateError(
        `${task.name}: the state of checkpoint ${task.restoredCheckpointId} is not a source's offset: ${parsed.error.message}`,
      );
    }
    this.corpus.skipLines(parsed.data.lines);
    this.lines = parsed.data.lines;
    this.records = parsed.data.records;
    this.restoredRecords = parsed.data.records;
  }

  /**
   * Its counters, from its metrics (`numRecordsOut`, `numBytesOut`, `outPoolUsage`); a restored
   * attempt adds the words of its checkpoint to `numRecordsOut`, which counts its own.
   */
  progress(): TaskProgress {
    return taskProgressOfTask(this.task, "source", this.finished, this.restoredRecords);
  }
}
