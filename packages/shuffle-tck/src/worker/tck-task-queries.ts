import { BroadcastChannel, isMainThread } from "node:worker_threads";
import type { TckTasks } from "../tck-tasks.js";

/**
 * The channel (per process) on which a conformance worker asks the threads that run the kit's
 * tasks about them: with slot threads (`taskmanager.task-slots.mode: threaded`) each thread has
 * its own instance of the kit's code, and only that thread knows its tasks' progress.
 */
const CHANNEL = `sluice-tck-tasks-${process.pid}`;

/** What the worker asks about one task (by execution attempt). */
export type TckTaskQuery = "producerStatus" | "consumerStatus" | "resume";

interface QueryMessage {
  readonly kind: "query";
  readonly id: number;
  readonly query: TckTaskQuery;
  readonly attempt: string;
}

interface AnswerMessage {
  readonly kind: "answer";
  readonly id: number;
  /** False from a thread that runs no such task of the kit. */
  readonly known: boolean;
  readonly value?: unknown;
}

/**
 * What `tasks` says about `attempt`, or `undefined` when it runs no such task: a producer's
 * progress, a consumer's counts, or (for `resume`) that it was resumed.
 */
export function answerTckTaskQuery(
  tasks: TckTasks,
  query: TckTaskQuery,
  attempt: string,
): { value: unknown } | undefined {
  switch (query) {
    case "producerStatus": {
      const progress = tasks.producers.get(attempt);
      if (progress === undefined) return undefined;
      return {
        value: {
          emitted: progress.emitted,
          available: progress.available(),
          released: progress.released(),
        },
      };
    }
    case "consumerStatus": {
      const progress = tasks.consumers.get(attempt);
      if (progress === undefined) return undefined;
      return {
        value: {
          counts: [...progress.checker.counts],
          total: progress.checker.total,
          events: progress.events,
        },
      };
    }
    case "resume":
      if (!tasks.consumers.has(attempt) && !tasks.producers.has(attempt)) return undefined;
      tasks.resume(attempt);
      return { value: {} };
  }
}

/**
 * Answers the worker's queries about `tasks` on this thread, when it is a slot thread (the worker
 * asks its own thread's instance directly, and counts the answers of the slot threads).
 */
export function serveTckTaskQueries(tasks: TckTasks): void {
  if (isMainThread) return;
  const channel = new BroadcastChannel(CHANNEL);
  // A thread must end when its work does: the channel does not keep it alive.
  channel.unref();
  channel.onmessage = (event) => {
    const message = (event as { data: QueryMessage | AnswerMessage }).data;
    if (message.kind !== "query") return;
    const answer = answerTckTaskQuery(tasks, message.query, message.attempt);
    const reply: AnswerMessage =
      answer === undefined
        ? { kind: "answer", id: message.id, known: false }
        : { kind: "answer", id: message.id, known: true, value: answer.value };
    channel.postMessage(reply);
  };
}

let nextQuery = 0;

/**
 * Asks the `threads` threads that serve queries (the slot threads) about `attempt`; resolves with
 * the answer of the one that runs it, or `undefined` when none does (after every thread
 * answered, or `timeoutMs`).
 */
export function queryTckTaskThreads(
  query: TckTaskQuery,
  attempt: string,
  threads: number,
  timeoutMs = 5_000,
): Promise<{ value: unknown } | undefined> {
  const channel = new BroadcastChannel(CHANNEL);
  const id = nextQuery++;
  return new Promise<{ value: unknown } | undefined>((resolve) => {
    let answers = 0;
    const done = (answer: { value: unknown } | undefined) => {
      clearTimeout(timer);
      channel.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), timeoutMs);
    channel.onmessage = (event) => {
      const message = (event as { data: QueryMessage | AnswerMessage }).data;
      if (message.kind !== "answer" || message.id !== id) return;
      answers++;
      if (message.known) done({ value: message.value });
      else if (answers >= threads) done(undefined);
    };
    channel.postMessage({ kind: "query", id, query, attempt } satisfies QueryMessage);
  });
}
