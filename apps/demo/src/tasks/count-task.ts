import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { PollStatus, type Task } from "@sluice/runtime";
import type { TaskProgress } from "../task-progress.js";

/** Records delivered per synchronous poll before the task yields to the event loop. */
const RECORDS_PER_POLL = 8192;

/**
 * Count subtask: reads the words of its key groups from every source subtask (local channels
 * for sources on the same task manager, remote ones over the transport) and keeps running
 * counts. Polls synchronously in batches and awaits the gate only when nothing is available.
 */
export class CountTask {
  readonly counts = new Map<string, number>();
  private records = 0;
  private finished = false;

  constructor(private readonly task: Task) {}

  /** Reads until every channel delivered EndOfPartition. */
  async run(): Promise<void> {
    const { task, counts } = this;
    const reader = task.reader<string>();
    const onWord = (word: string) => {
      counts.set(word, (counts.get(word) ?? 0) + 1);
      this.records++;
    };
    for (;;) {
      const status = reader.pollRecords(onWord, RECORDS_PER_POLL);
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToEventLoop();
      task.signal.throwIfAborted();
    }
    this.finished = true;
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
