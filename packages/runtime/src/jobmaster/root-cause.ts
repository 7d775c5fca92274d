import { ErrorCodes, isSluiceError } from "@sluice/core";
import type { TaskManagerLocation } from "../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "./execution-vertex.js";

/**
 * Why the job is failing, and which task failed where (Flink's root exception of a failure): the
 * first failure that is not a consequence of another.
 */
export class RootCause {
  /** The failure; `undefined` while the job runs unharmed. */
  error: Error | undefined;
  /** The failed task, by its name and location when it failed (a restart renames it). */
  taskName: string | undefined;
  taskLocation: TaskManagerLocation | undefined;

  /** `error` is the cause; `task` failed with it (none: the job failed as a whole). */
  set(error: Error, task?: ExecutionVertex): void {
    this.error = error;
    this.taskName = task?.name;
    this.taskLocation = task?.gateway.location;
  }

  /** A task failed with `error` while the job was failing already. */
  taskFailedMeanwhile(task: ExecutionVertex, error: Error): void {
    // Reports race across processes: the producer whose partition a failed remote consumer
    // released may report first. The consumer's own error, arriving within that failover, is the
    // cause, not the release it caused.
    if (
      this.error !== undefined &&
      isConsequentialFailure(this.error) &&
      !isConsequentialFailure(error)
    ) {
      this.set(error, task);
    }
  }

  /** The job recovered: no cause any more. */
  clear(): void {
    this.error = undefined;
    this.taskName = undefined;
    this.taskLocation = undefined;
  }
}

/**
 * Whether a task's failure is a consequence of another failure rather than a cause: its
 * partition or channel was released or canceled, or its producer failed (the producer reports
 * its own error). Flink does not take such failures as the job's root cause either.
 */
function isConsequentialFailure(cause: Error): boolean {
  return (
    isSluiceError(cause, ErrorCodes.CANCELLED) || isSluiceError(cause, ErrorCodes.PRODUCER_FAILED)
  );
}
