import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { MessageChannel, Worker } from "node:worker_threads";
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
import { type RunningTaskSlot, runTaskSlot } from "./task-slot-runner.js";

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

/** What a slot's carrier tells its handle. */
interface CarrierEvents {
  message(message: FromSlotThread): void;
  /** The error the slot ended with (before its `exit`). */
  error(error: Error): void;
  exit(code: number): void;
}

/** What carries a slot's messages: its worker thread, or the channel to the main thread's slot. */
interface SlotCarrier {
  post(message: ToSlotThread): void;
  /** Ends the slot at once; its `exit` follows. */
  end(): Promise<void>;
}

/** Slot `init.slotIndex` on a worker thread of its own: one isolate per slot. */
function workerCarrier(init: TaskSlotThreadInit, events: CarrierEvents): SlotCarrier {
  const execArgv = threadExecArgv();
  const worker = new Worker(slotThreadScript(), {
    workerData: init,
    ...(execArgv === undefined ? {} : { execArgv }),
    resourceLimits: { maxYoungGenerationSizeMb: init.youngGenerationSizeMb },
    name: `slot ${init.slotIndex}`,
  });
  worker.on("message", (message: FromSlotThread) => events.message(message));
  worker.on("error", (error) => events.error(error));
  worker.on("exit", (code) => events.exit(code));
  return {
    post: (message) => worker.postMessage(message),
    end: async () => {
      await worker.terminate();
    },
  };
}

/**
 * Slot `init.slotIndex` on the main thread (`taskmanager.task-slots.main-thread-slot`): the same
 * slot code a thread runs, on one end of a `MessageChannel`, so that the handle and the table
 * cannot tell it from a thread. It cannot die as a thread does: an error of its own code that it
 * catches (see `runTaskSlot`) fails it instead: its TaskExecutor is closed (its tasks' memory
 * goes back first; what it still reports is dropped) and it ends with that error as a thread
 * would, exit code 1.
 */
function mainThreadCarrier(init: TaskSlotThreadInit, events: CarrierEvents): SlotCarrier {
  const { port1: handleEnd, port2: slotEnd } = new MessageChannel();
  let failed = false;
  handleEnd.on("message", (message: FromSlotThread) => {
    if (!failed) events.message(message);
  });
  let ending: Promise<void> | undefined;
  const end = (code: number, error?: Error): Promise<void> => {
    ending ??= (async () => {
      if (error !== undefined) {
        failed = true;
        events.error(error);
      }
      // Its exit lets the table take back the slot's memory and start it again: only once its
      // TaskExecutor no longer runs (a start that failed left none).
      await running.then(
        (slot) => slot.close().catch(() => undefined),
        () => undefined,
      );
      handleEnd.close();
      slotEnd.close();
      events.exit(code);
    })();
    return ending;
  };
  // When it cannot start it posts `start-failed`, and its handle ends it.
  const running: Promise<RunningTaskSlot> = runTaskSlot(slotEnd, init, (error) => {
    void end(1, error);
  });
  return { post: (message) => handleEnd.postMessage(message), end: () => end(0) };
}

/**
 * The main thread's handle on one slot (`taskmanager.task-slots.mode: threaded`), on a worker
 * thread of its own or on the main thread (`taskmanager.task-slots.main-thread-slot`): it starts
 * the slot, makes calls on it (each answered with a result), passes its other messages to the
 * task slot table, and says how it ended. Both run the same slot code over the same messages.
 */
export class TaskSlotThread {
  readonly slotIndex: number;
  readonly threadIndex: number;
  /** Resolves when the thread ended, for whatever reason. */
  readonly exited: Promise<SlotThreadExit>;
  /** True for the slot on the main thread (`taskmanager.task-slots.main-thread-slot`). */
  readonly onMainThread: boolean;
  private readonly carrier: SlotCarrier;
  private readonly calls = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  private nextCall = 0;
  private fatal: Error | undefined;
  private ended = false;

  private constructor(
    init: TaskSlotThreadInit,
    onMainThread: boolean,
    onMessage: (message: FromSlotThread) => void,
  ) {
    this.slotIndex = init.slotIndex;
    this.threadIndex = init.threadIndex;
    this.onMainThread = onMainThread;
    let exit: (code: number) => void = () => undefined;
    this.exited = new Promise((resolve) => {
      exit = (code) => {
        this.ended = true;
        const cause =
          this.fatal ??
          new TaskSlotThreadError(`the thread of slot ${this.slotIndex} exited with code ${code}`);
        for (const call of this.calls.values()) call.reject(cause);
        this.calls.clear();
        resolve({ code, error: this.fatal });
      };
    });
    const events: CarrierEvents = {
      message: (message) => {
        if (message.kind === "result") this.settle(message.id, message);
        else onMessage(message);
      },
      error: (error) => {
        this.fatal ??= error;
      },
      exit,
    };
    this.carrier = onMainThread ? mainThreadCarrier(init, events) : workerCarrier(init, events);
  }

  /**
   * Starts slot `init.slotIndex`, on a thread of its own or (`onMainThread`) on this one, and
   * resolves once its TaskExecutor runs.
   *
   * @throws the slot's start-up error (loading the plugin or the user code, its environment).
   */
  static async start(
    init: TaskSlotThreadInit,
    onMessage: (thread: TaskSlotThread, message: FromSlotThread) => void,
    onMainThread = false,
  ): Promise<TaskSlotThread> {
    let started: (() => void) | undefined;
    let failed: ((error: Error) => void) | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    const thread: TaskSlotThread = new TaskSlotThread(init, onMainThread, (message) => {
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

  /** Sends a message to the slot; dropped once it ended. */
  post(message: ToSlotThread): void {
    if (!this.ended) this.carrier.post(message);
  }

  /** True once the thread ended. */
  get hasEnded(): boolean {
    return this.ended;
  }

  /**
   * Ends the slot at once (its TaskExecutor was closed, or it does not answer): a thread is
   * terminated; the slot on the main thread closes its TaskExecutor and its channel.
   */
  async terminate(): Promise<void> {
    if (!this.ended) await this.carrier.end();
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
