import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { PollStatus, type Task } from "@sluice/runtime";
import { taskProgressOfTask } from "../task-metrics.js";
import type { TaskProgress } from "../task-progress.js";
import { RatePacer } from "../throttle.js";

/** Records delivered per synchronous poll before the task yields to the event loop. */
const RECORDS_PER_POLL = 8192;

/**
 * Count subtask: reads the words of its key groups from every source subtask (local channels
 * for sources on the same task manager, remote ones over the transport) and keeps running
 * counts. Polls synchronously in batches and awaits the gate only when nothing is available.
 * With a throttle (`--throttle`) it reads at most that many words per second, so its inputs fill
 * up and the sources become back-pressured.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
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
    const reader = task.reader<string>();
    let polled = 0;
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
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

  /** Its counters, from its metrics (`numRecordsIn`, `numBytesIn`, `inPoolUsage`). */
  progress(): TaskProgress {
    return taskProgressOfTask(this.task, this.finished);
  }
}
