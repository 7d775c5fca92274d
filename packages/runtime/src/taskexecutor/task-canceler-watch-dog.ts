import { TimeoutError } from "@sluice/core";
import { TaskManagerOptions } from "@sluice/runtime-api";
import { isTerminal } from "../messages/task-execution-state.js";
import type { Task } from "./task.js";

/**
 * Flink's `TaskCancelerWatchDog`: once a task is canceled or failed from outside (its `signal`
 * aborted), its code has `task.cancellation.timeout` to return. A task still not ended then is
 * handed to `onTimeout` with a TimeoutError naming it: its code ignores its signal, and nothing
 * but the process's end stops JavaScript that keeps running. 0 turns the watch off.
 */
export class TaskCancelerWatchDog {
  private readonly timeoutMs: number;
  private readonly onTimeout: (task: Task, error: TimeoutError) => void;

  constructor(timeoutMs: number, onTimeout: (task: Task, error: TimeoutError) => void) {
    this.timeoutMs = timeoutMs;
    this.onTimeout = onTimeout;
  }

  /** Watches `task` from its cancellation (or external failure) to its end. */
  watch(task: Task): void {
    if (this.timeoutMs <= 0) return;
    const start = () => {
      if (isTerminal(task.state)) return;
      // Not unref'd: a task that never ends must still be dealt with, and the timer goes as soon
      // as the task ends.
      const timer = setTimeout(() => {
        if (isTerminal(task.state)) return;
        this.onTimeout(
          task,
          new TimeoutError(
            `${task.name} (${task.executionAttemptId}) did not end within ${this.timeoutMs} ms (${TaskManagerOptions.TASK_CANCELLATION_TIMEOUT.key}) of being ${task.state === "CANCELING" ? "canceled" : "failed"}: its code ignores task.signal`,
          ),
        );
      }, this.timeoutMs);
      void task.terminated.then(() => clearTimeout(timer));
    };
    if (task.signal.aborted) start();
    else task.signal.addEventListener("abort", start, { once: true });
  }
}
