import { type Deferred, deferred } from "@sluice/core";

/** A promise that never settles: no mail arrives at a closed mailbox. */
const NEVER: Promise<void> = new Promise(() => {});

/** One action queued for a task's own code to run (a checkpoint trigger). */
export interface Mail {
  /** Runs the action; called by the task between records. */
  run(): void;
  /** The task ends without running it: report that it will not happen. Must not throw. */
  drop(): void;
}

/**
 * The actions other parts of the runtime ask a running task to perform between two of its
 * records (Flink's TaskMailbox): on Node the task's code is the only thing that knows when its
 * state is consistent, so a checkpoint trigger for a source is queued here and run when the
 * source calls `task.processMail()` or `task.yieldToMailbox()`. Mail runs in the order it was
 * put.
 */
export class TaskMailbox {
  private readonly queue: Mail[] = [];
  private arrival: Deferred<void> | undefined;
  private closed = false;

  /** Queues `mail`; after {@link close}, drops it at once. */
  put(mail: Mail): void {
    if (this.closed) {
      mail.drop();
      return;
    }
    this.queue.push(mail);
    const arrival = this.arrival;
    this.arrival = undefined;
    arrival?.resolve();
  }

  /** True while some mail waits. */
  hasMail(): boolean {
    return this.queue.length > 0;
  }

  /** Runs every queued mail in order, including mail put while it runs. */
  runAll(): void {
    for (let mail = this.queue.shift(); mail !== undefined; mail = this.queue.shift()) {
      mail.run();
    }
  }

  /** Resolves once mail is queued (at once if some is); never once closed. */
  mailArrived(): Promise<void> {
    if (this.closed) return NEVER;
    if (this.queue.length > 0) return Promise.resolve();
    this.arrival ??= deferred();
    return this.arrival.promise;
  }

  /** Accepts no more mail and drops what is queued. Idempotent. */
  close(): void {
    this.closed = true;
    for (let mail = this.queue.shift(); mail !== undefined; mail = this.queue.shift()) mail.drop();
    // A waiter was waiting for mail that will not come; its other waits (the task's own
    // condition) still end its wait.
    this.arrival = undefined;
  }
}
