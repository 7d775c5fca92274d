import type { Task } from "./task.js";

let starting: Task | undefined;

/**
 * The task whose code is starting: set while `Task.run` calls the task's invokable, up to the
 * invokable's first `await`, and `undefined` at any other time. What the task's code constructs
 * there (a `TwoPhaseCommitSink`) learns from it which job, leadership and attempt it belongs to
 * without being told. A plain variable, not an `AsyncLocalStorage`: on Node 20 that would put a
 * promise hook on every promise of the data path.
 */
export function startingTask(): Task | undefined {
  return starting;
}

/** Calls `invoke` with {@link startingTask} set to `task` for its synchronous part. */
export function startTask<T>(task: Task, invoke: () => T): T {
  const previous = starting;
  starting = task;
  try {
    return invoke();
  } finally {
    starting = previous;
  }
}
