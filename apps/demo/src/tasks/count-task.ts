import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { IllegalStateError } from "@sluice/core";
import { PollStatus, type Task } from "@sluice/runtime";
import * as z from "zod";
import { taskProgressOfTask } from "../task-metrics.js";
import type { TaskProgress } from "../task-progress.js";
import { RatePacer } from "../throttle.js";

/** Records delivered per synchronous poll before the task yields to the event loop. */
const RECORDS_PER_POLL = 8192;

/** A count subtask's checkpointed state: its counts by word, and how many words it received. */
export const CountStateSchema = z.object({
  counts: z.record(z.string(), z.int().min(0)),
  records: z.int().min(0),
});

/** A count subtask's checkpointed state. */
export type CountState = z.output<typeof CountStateSchema>;

/**
 * Count subtask: reads the words of its key groups from every source subtask (local channels
 * for sources on the same task manager, remote ones over the transport) and keeps running
 * counts. Polls synchronously in batches and awaits the gate only when nothing is available.
 * With a throttle (`--throttle`) it reads at most that many words per second, so its inputs fill
 * up and the sources become back-pressured.
 *
 * With checkpoints, its state is its map: the task's reader takes the snapshot inside the poll
 * that meets the checkpoint's barriers, between two records; a restored attempt starts from the
 * map it stored.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
  /** Words received, with those of the checkpoint it was restored from (its state). */
  private records = 0;
  /** Words the checkpoint it was restored from had received (0 for a first attempt). */
  private restoredRecords = 0;
  private finished = false;
  private readonly pacer: RatePacer;

  /** @param throttle the current limit in words per second (`undefined`: none). */
  constructor(
    private readonly task: Task,
    throttle: () => number | undefined = () => undefined,
  ) {
    this.pacer = new RatePacer(throttle);
  }

  /** Reads until every channel delivered EndOfPartition. */
  async run(): Promise<void> {
    const { task, counts, pacer } = this;
    this.restore();
    task.setCheckpointHandler({
      snapshotState: () =>
        ({ counts: Object.fromEntries(counts), records: this.records }) satisfies CountState,
    });
    const reader = task.reader<string>();
    let polled = 0;
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      this.records++;
      polled++;
    };
    for (;;) {
      polled = 0;
      const status = reader.pollRecords(onWord, pacer.batchSize(RECORDS_PER_POLL));
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToEventLoop();
      await pacer.pace(polled, task.signal);
      task.signal.throwIfAborted();
    }
    this.finished = true;
  }

  /** A restored attempt loads the counts of the checkpoint it was restored from. */
  private restore(): void {
    const { task } = this;
    if (task.restoredState === undefined) return;
    const parsed = CountStateSchema.safeParse(task.restoredState);
    if (!parsed.success) {
      throw new IllegalStateError(
        `${task.name}: the state of checkpoint ${task.restoredCheckpointId} is not a counter's map: ${parsed.error.message}`,
      );
    }
    for (const [word, count] of Object.entries(parsed.data.counts)) this.counts.set(word, count);
    this.records = parsed.data.records;
    this.restoredRecords = parsed.data.records;
  }

  /**
   * Its counters, from its metrics (`numRecordsIn`, `numBytesIn`, `inPoolUsage`); a restored
   * attempt adds the words of its checkpoint to `numRecordsIn`, which counts its own.
   */
  progress(): TaskProgress {
    return taskProgressOfTask(this.task, this.finished, this.restoredRecords);
  }
}
