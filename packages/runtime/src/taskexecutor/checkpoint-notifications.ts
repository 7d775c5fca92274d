import { deferred } from "@sluice/core";
import { CheckpointError } from "../checkpointing/checkpoint-error.js";
import type { CheckpointListener } from "../checkpointing/checkpoint-listener.js";
import { asError } from "../util/as-error.js";

/** What {@link CheckpointNotifications} needs of its task. */
export interface CheckpointNotificationTarget {
  /** The task's name, for errors. */
  readonly name: string;
  /** True once the task failed or was canceled: later notifications are not handed on. */
  isFailed(): boolean;
  /** Fails the task from outside (its listener could not handle a notification). */
  fail(cause: Error): void;
}

/**
 * The checkpoint notifications of one task (Flink's `notifyCheckpointCompleteAsync` and
 * `notifyCheckpointAbortAsync`): each is handed to the task's {@link CheckpointListener} after
 * the ones before it were handled, and the newest completed checkpoint the listener saw is kept,
 * which is what the task's final checkpoint waits for.
 */
export class CheckpointNotifications {
  /** The task code's listener; `undefined` until it registers one. */
  listener: CheckpointListener | undefined;
  private readonly target: CheckpointNotificationTarget;
  /** The notifications to the listener, one after the other; never rejects. */
  private queue: Promise<void> = Promise.resolve();
  /** Resolved (and replaced) whenever a notification was handled. */
  private notified = deferred<void>();
  /** The newest checkpoint whose completion the listener handled (0: none). */
  private lastCompleted = 0n;

  constructor(target: CheckpointNotificationTarget) {
    this.target = target;
  }

  /** The newest checkpoint whose completion the listener handled (0n: none). */
  get lastCompletedCheckpointId(): bigint {
    return this.lastCompleted;
  }

  /** Resolves once the next notification was handled. */
  nextHandled(): Promise<void> {
    return this.notified.promise;
  }

  /** Resolves once every notification queued so far was handled; never rejects. */
  settled(): Promise<void> {
    return this.queue;
  }

  /** Queues the notification that `checkpointId` completed (`completed`) or was aborted. */
  enqueue(checkpointId: bigint, completed: boolean, what: string): void {
    this.queue = this.queue.then(async () => {
      if (this.target.isFailed()) return;
      const listener = this.listener;
      try {
        if (completed) await listener?.notifyCheckpointComplete(checkpointId);
        else await listener?.notifyCheckpointAborted?.(checkpointId);
      } catch (error) {
        // As in Flink: a listener that cannot commit fails the task (and so the job fails over).
        this.target.fail(
          new CheckpointError(
            `${this.target.name}: ${what} of checkpoint ${checkpointId} failed: ${asError(error).message}`,
            { cause: error },
          ),
        );
        return;
      }
      if (completed && checkpointId > this.lastCompleted) {
        this.lastCompleted = checkpointId;
      }
      const notified = this.notified;
      this.notified = deferred();
      notified.resolve();
    });
  }
}
