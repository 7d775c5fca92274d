import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { IllegalStateError } from "@sluice/core";
import { deserializeThrowable, serializeThrowable } from "../messages/serialized-throwable.js";
import { TaskSlotThreadError } from "./errors.js";
import type {
  FromSlotThread,
  Outcome,
  SlotCall,
  TaskSlotThreadInit,
  ToSlotThread,
} from "./task-slot-messages.js";

/**
 * The slot thread's entry, compiled: a thread runs JavaScript, so from the TypeScript sources
 * (tests) it is the built one in `dist/`, next to `src/`.
 */
function slotThreadScript(): URL {
  const here = import.meta.url;
  const script = here.endsWith(".ts")
    ? new URL("../../dist/taskexecutor/task-slot-thread-main.js", here)
    : new URL("./task-slot-thread-main.js", here);
  if (!existsSync(script)) {
    throw new TaskSlotThreadError(
      `the slot thread's script ${fileURLToPath(script)} does not exist: build @sluice/runtime (\`pnpm build\`) or reinstall it`,
    );
  }
  return script;
}

/** V8's heap and stack options: a thread inherits them, but may not be given them explicitly. */
const V8_OPTION =
  /^--(max-old-space-size|max-semi-space-size|max-young-generation-size|stack-size|expose-gc|expose_gc)\b/;

/**
 * The Node options of a slot thread: the process's own (inherited, as by default), but without
 * export conditions, which would make the thread resolve the workspace's TypeScript sources (a
 * test runner's `@sluice/source`). `undefined` (inherit) when the process has none.
 */
function threadExecArgv(): string[] | undefined {
  const args: string[] = [];
  const parent = process.execArgv;
  let conditions = false;
  for (let i = 0; i < parent.length; i++) {
    const arg = parent[i] as string;
    if (arg === "--conditions" || arg === "-C") {
      conditions = true;
      i++;
      continue;
    }
    if (arg.startsWith("--conditions=") || arg.startsWith("-C=")) {
      conditions = true;
      continue;
    }
    if (!V8_OPTION.test(arg)) args.push(arg);
  }
  return conditions ? args : undefined;
}

/** How a slot thread ended: the error that killed it, or its exit code. */
export interface SlotThreadExit {
  readonly code: number;
  /** The uncaught exception (or unhandled rejection) that ended it, when one did. */
  readonly error: Error | undefined;
}

/**
 * The main thread's handle on one slot thread (`taskmanager.task-slots.mode: threaded`): it starts
 * the thread, makes calls on it (each answered with a result), passes its other messages to the
 * task slot table, and says how it ended.
 */
export class TaskSlotThread {
  readonly slotIndex: number;
  readonly threadIndex: number;
  /** Resolves when the thread ended, for whatever reason. */
  readonly exited: Promise<SlotThreadExit>;
  private readonly worker: Worker;
  private readonly calls = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private nextCall = 0;
  private fatal: Error | undefined;
  private ended = false;

  private constructor(init: TaskSlotThreadInit, onMessage: (message: FromSlotThread) => void) {
    this.slotIndex = init.slotIndex;
    this.threadIndex = init.threadIndex;
    const execArgv = threadExecArgv();
    this.worker = new Worker(slotThreadScript(), {
      workerData: init,
      ...(execArgv === undefined ? {} : { execArgv }),
      resourceLimits: { maxYoungGenerationSizeMb: init.youngGenerationSizeMb },
      name: `slot ${init.slotIndex}`,
    });
    this.worker.on("message", (message: FromSlotThread) => {
      if (message.kind === "result") this.settle(message.id, message);
      else onMessage(message);
    });
    this.worker.on("error", (error) => {
      this.fatal ??= error;
    });
    this.exited = new Promise((resolve) => {
      this.worker.on("exit", (code) => {
        this.ended = true;
        const cause =
          this.fatal ??
          new TaskSlotThreadError(`the thread of slot ${this.slotIndex} exited with code ${code}`);
        for (const call of this.calls.values()) call.reject(cause);
        this.calls.clear();
        resolve({ code, error: this.fatal });
      });
    });
  }

  /**
   * Starts the thread of slot `init.slotIndex` and resolves once its TaskExecutor runs.
   *
   * @throws the slot's start-up error (loading the plugin or the user code, its environment).
   */
  static async start(
    init: TaskSlotThreadInit,
    onMessage: (thread: TaskSlotThread, message: FromSlotThread) => void,
  ): Promise<TaskSlotThread> {
    let started: (() => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    const thread: TaskSlotThread = new TaskSlotThread(init, (message) => {
      if (message.kind === "ready") started?.();
      else if (message.kind === "start-failed") failed?.(deserializeThrowable(message.error));
      else onMessage(thread, message);
    });
    void thread.exited.then(({ code, error }) =>
      failed?.(
        error ??
          new TaskSlotThreadError(
            `the thread of slot ${init.slotIndex} exited with code ${code} while starting`,
          ),
      ),
    );
    try {
      await ready;
    } catch (error) {
      await thread.terminate();
      throw error;
    }
    return thread;
  }

  /** Calls `call` on the slot's TaskExecutor; resolves with its result. */
  call(call: SlotCall): Promise<unknown> {
    if (this.ended) {
      return Promise.reject(
        this.fatal ?? new IllegalStateError(`the thread of slot ${this.slotIndex} has ended`),
      );
    }
    const id = this.nextCall++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.post({ kind: "call", id, call });
    });
  }

  /** Answers request `id` of the slot (a producer state, a subpartition) with `outcome`. */
  answer(id: number, outcome: Promise<unknown>): void {
    outcome.then(
      (value) => this.post({ kind: "answer", id, ok: true, value }),
      (error: unknown) =>
        this.post({ kind: "answer", id, ok: false, error: serializeThrowable(error) }),
    );
  }

  /** Sends a message to the thread; dropped once it ended. */
  post(message: ToSlotThread): void {
    if (!this.ended) this.worker.postMessage(message);
  }

  /** True once the thread ended. */
  get hasEnded(): boolean {
    return this.ended;
  }

  /** Ends the thread at once (its TaskExecutor was closed, or it does not answer). */
  async terminate(): Promise<void> {
    if (!this.ended) await this.worker.terminate();
    await this.exited;
  }

  private settle(id: number, outcome: Outcome): void {
    const call = this.calls.get(id);
    if (call === undefined) return;
    this.calls.delete(id);
    if (outcome.ok) call.resolve(outcome.value);
    else call.reject(deserializeThrowable(outcome.error));
  }
}
