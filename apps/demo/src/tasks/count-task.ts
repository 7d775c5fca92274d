import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { IllegalStateError } from "@sluice/core";
import { PollStatus, type Task, TransactionalFileSink } from "@sluice/runtime";
import type { JsonValue } from "@sluice/runtime-api";
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
  /** The file sink's part (`--sink files`): its pre-committed and open part files. */
  sink: z.json().optional(),
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
 *
 * With a file sink (`--sink files`, the `sink.directory` parameter) it also writes its counts to
 * the outside, exactly once: at each checkpoint, one `word<TAB>count` line per word counted since
 * the previous one (the increase) goes into the sink's transaction of that checkpoint, a part file
 * committed when the checkpoint completes. Summed over the committed files, each word's lines
 * give its count. Its last lines are committed by the final checkpoint it waits for.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
  /** Words received, with those of the checkpoint it was restored from (its state). */
  private records = 0;
  /** Words the checkpoint it was restored from had received (0 for a first attempt). */
  private restoredRecords = 0;
  private finished = false;
  private readonly pacer: RatePacer;
  /** `--sink files`: where the counts go, and the increases since the last checkpoint. */
  private readonly sink: TransactionalFileSink | undefined;
  private readonly increases = new Map<string, number>();

  /** @param throttle the current limit in words per second (`undefined`: none). */
  constructor(
    private readonly task: Task,
    throttle: () => number | undefined = () => undefined,
  ) {
    this.pacer = new RatePacer(throttle);
    const directory = (task.configuration.sink as { directory?: unknown } | undefined)?.directory;
    // The sink names its part files by the job, the job manager's leadership and the attempt.
    this.sink =
      typeof directory === "string"
        ? new TransactionalFileSink({
            directory,
            partPrefix: `part-${task.subtaskIndex}`,
            taskName: task.name,
            task,
          })
        : undefined;
  }

  /** Transactions the file sink aborted in this attempt (restored ones included). */
  get abortedTransactions(): number {
    return this.sink?.stats.abortedTransactions ?? 0;
  }

  /** Reads until every channel delivered EndOfPartition. */
  async run(): Promise<void> {
    const { task, counts, sink, increases } = this;
    const sinkState = this.restore();
    if (sink === undefined) {
      task.setCheckpointHandler({
        snapshotState: () =>
          ({ counts: Object.fromEntries(counts), records: this.records }) satisfies CountState,
      });
    } else {
      await sink.initializeState(sinkState);
      task.setCheckpointHandler({
        snapshotState: (checkpointId) => {
          for (const [word, n] of increases) sink.write(`${word}\t${n}\n`);
          increases.clear();
          return {
            counts: Object.fromEntries(counts),
            records: this.records,
            sink: sink.snapshotState(checkpointId),
          } satisfies CountState;
        },
        persistSnapshot: (checkpointId) => sink.persistSnapshot(checkpointId),
      });
      task.setCheckpointListener(sink);
    }
    try {
      await this.count();
    } catch (error) {
      // Canceled or failed: the open part file goes; the pre-committed ones stay for the restore.
      await sink?.close().catch(() => {});
      throw error;
    }
    this.finished = true;
  }

  private async count(): Promise<void> {
    const { task, counts, pacer, increases } = this;
    const tracking = this.sink !== undefined;
    const reader = task.reader<string>();
    let polled = 0;
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      if (tracking) increases.set(word, (increases.get(word) ?? 0) + 1);
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
  }

  /**
   * A restored attempt loads the counts of the checkpoint it was restored from; returns the
   * sink's part of it.
   */
  private restore(): JsonValue | undefined {
    const { task } = this;
    if (task.restoredState === undefined) return undefined;
    const parsed = CountStateSchema.safeParse(task.restoredState);
    if (!parsed.success) {
      throw new IllegalStateError(
        `${task.name}: the state of checkpoint ${task.restoredCheckpointId} is not a counter's map: ${parsed.error.message}`,
      );
    }
    for (const [word, count] of Object.entries(parsed.data.counts)) this.counts.set(word, count);
    this.records = parsed.data.records;
    this.restoredRecords = parsed.data.records;
    return parsed.data.sink as JsonValue | undefined;
  }

  /**
   * Its counters, from its metrics (`numRecordsIn`, `numBytesIn`, `inPoolUsage`); a restored
   * attempt adds the words of its checkpoint to `numRecordsIn`, which counts its own.
   */
  progress(): TaskProgress {
    return taskProgressOfTask(this.task, "count", this.finished, this.restoredRecords);
  }
}
