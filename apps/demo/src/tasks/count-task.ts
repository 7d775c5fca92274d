import { setTimeout as sleep, setImmediate as yieldToEventLoop } from "node:timers/promises";
import { IllegalStateError } from "@sluice/core";
import { PollStatus, type Task } from "@sluice/runtime";
import * as z from "zod";
import type { TaskProgress } from "../task-progress.js";

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
 *
 * With checkpoints, its state is its map: the task's reader takes the snapshot inside the poll
 * that meets the checkpoint's barriers, between two records; a restored attempt starts from the
 * map it stored.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
  private records = 0;
  private finished = false;

  constructor(private readonly task: Task) {}

  /** Reads until every channel delivered EndOfPartition. */
  async run(): Promise<void> {
    const { task, counts } = this;
    this.restore();
    task.setCheckpointHandler({
      snapshotState: () =>
        ({ counts: Object.fromEntries(counts), records: this.records }) satisfies CountState,
    });
    const reader = task.reader<string>();
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      this.records++;
    };
    // `--count-rate`: at most this many records per second, so the job is back-pressured.
    const rate = task.configuration.recordsPerSecond;
    const limited = typeof rate === "number" && rate > 0;
    const start = performance.now();
    let received = 0;
    for (;;) {
      let max = RECORDS_PER_POLL;
      if (limited) {
        max = Math.min(max, Math.floor(((performance.now() - start) / 1000) * rate) - received);
        if (max <= 0) {
          await sleep(1);
          task.signal.throwIfAborted();
          continue;
        }
      }
      const before = this.records;
      const status = reader.pollRecords(onWord, max);
      received += this.records - before;
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToEventLoop();
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
  }

  progress(): TaskProgress {
    const metrics = this.task.gates[0]?.metrics;
    return {
      name: this.task.name,
      kind: "count",
      subtaskIndex: this.task.subtaskIndex,
      records: this.records,
      bytes: metrics?.numBytesIn ?? 0,
      poolUsage: metrics?.inPoolUsage() ?? 0,
      backPressuredTimeMs: 0,
      finished: this.finished,
    };
  }
}
