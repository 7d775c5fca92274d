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

/** What a notification says of its checkpoint. */
export type CheckpointNotification = "complete" | "abort" | "subsume";

/** The listener method and the task method of each kind, for messages. */
const METHOD: Readonly<Record<CheckpointNotification, string>> = {
  complete: "notifyCheckpointComplete",
  abort: "notifyCheckpointAborted",
  subsume: "notifyCheckpointSubsumed",
};

/**
 * The checkpoint notifications of one task (Flink's `notifyCheckpointCompleteAsync`,
 * `notifyCheckpointAbortAsync` and `notifyCheckpointSubsumedAsync`): each is handed to the
 * task's {@link CheckpointListener} after the ones before it were handled, and the newest
 * completed checkpoint the listener saw is kept, which is what the task's final checkpoint
 * waits for. As in Flink, a completion no newer than one already queued is dropped: a newer
 * completion stands for the older ones, and an abort carries the newest completion too.
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
  /** The newest checkpoint whose completion was queued (Flink's `latestReportCheckpointId`). */
  private lastQueuedCompletion = 0n;

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

  /** Queues the notification that `checkpointId` completed, was aborted or was subsumed. */
  enqueue(checkpointId: bigint, kind: CheckpointNotification): void {
    const completed = kind === "complete";
    if (completed) {
      if (checkpointId <= this.lastQueuedCompletion) return;
      this.lastQueuedCompletion = checkpointId;
    }
    const what = METHOD[kind];
    this.queue = this.queue.then(async () => {
      if (this.target.isFailed()) return;
      const listener = this.listener;
      try {
        if (completed) await listener?.notifyCheckpointComplete(checkpointId);
        else if (kind === "abort") await listener?.notifyCheckpointAborted?.(checkpointId);
        else await listener?.notifyCheckpointSubsumed?.(checkpointId);
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
