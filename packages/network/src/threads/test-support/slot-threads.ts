import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { SharedNetworkMemory, ThreadDoorbell } from "@sluice/core";

/** The worker script: plain JavaScript over the built packages. */
const WORKER = new URL("./cross-thread-worker.mjs", import.meta.url);
const NETWORK_DIST = new URL("../../../dist/index.js", import.meta.url);

/** A message a slot thread of the tests posts. */
export interface ThreadMessage {
  readonly kind: string;
  readonly name?: string;
  readonly [key: string]: unknown;
}

/** What a thread's `produce` or `consume` reported when it ended. */
export interface RunResult {
  readonly emitted?: number;
  readonly received?: number;
  readonly outOfOrder?: number;
  readonly leftover?: number;
  readonly backPressured?: number;
  readonly failed?: { readonly code?: string; readonly name: string; readonly message: string };
}

/** One slot thread of the tests. */
class SlotThread {
  private readonly listeners = new Set<(message: ThreadMessage) => void>();
  readonly exited: Promise<number>;

  constructor(
    readonly index: number,
    readonly worker: Worker,
    route: (from: SlotThread, message: ThreadMessage) => void,
  ) {
    worker.on("message", (message: ThreadMessage) => {
      route(this, message);
      for (const listener of [...this.listeners]) listener(message);
    });
    this.exited = new Promise((resolve) => worker.on("exit", resolve));
  }

  /** Resolves with the first message (from now on) that `matches`. */
  next(matches: (message: ThreadMessage) => boolean): Promise<ThreadMessage> {
    return new Promise((resolve, reject) => {
      const listener = (message: ThreadMessage) => {
        if (!matches(message)) return;
        this.listeners.delete(listener);
        resolve(message);
      };
      this.listeners.add(listener);
      void this.exited.then((code) =>
        reject(new Error(`slot thread ${this.index} exited (code ${code}) before the message`)),
      );
    });
  }

  post(message: Record<string, unknown>): void {
    this.worker.postMessage(message);
  }
}

/**
 * The test thread as the runtime's router between "slot threads" of one task manager (thread 0
 * holds the shared network memory and routes every subpartition request to the thread that
 * produces the partition), and the slot threads themselves.
 */
export class SlotThreads {
  readonly memory: SharedNetworkMemory;
  readonly signals: SharedArrayBuffer;
  private readonly threads = new Map<number, SlotThread>();
  /** Which thread produces each partition. */
  private readonly producers = new Map<string, number>();
  private readonly served = new Map<number, { from: SlotThread; id: number }>();
  private nextServe = 0;

  constructor(segments: number, segmentSize: number, maxThreads = 4) {
    if (!existsSync(NETWORK_DIST)) {
      throw new Error(`${fileURLToPath(NETWORK_DIST)} is missing: run \`pnpm build\` first`);
    }
    this.memory = SharedNetworkMemory.create(segments, segmentSize, maxThreads);
    this.signals = ThreadDoorbell.createSignals(maxThreads);
  }

  /** Starts slot thread `index`. */
  async start(index: number): Promise<SlotThread> {
    const worker = new Worker(WORKER, {
      workerData: { handle: this.memory.handle, signals: this.signals, threadIndex: index },
      // Not vitest's conditions: the thread runs the built packages.
      execArgv: [],
    });
    const thread = new SlotThread(index, worker, (from, message) => this.route(from, message));
    this.threads.set(index, thread);
    await thread.next((message) => message.kind === "ready");
    return thread;
  }

  /** Thread `index` produces `partitionId` from now on. */
  produce(
    thread: SlotThread,
    name: string,
    partitionId: string,
    options: {
      readonly records: number;
      readonly payload: number;
      readonly subpartitions?: number;
      readonly maxBuffers?: number;
      readonly maxBuffersPerChannel?: number;
    },
  ): Promise<RunResult> {
    this.producers.set(partitionId, thread.index);
    const done = thread.next((message) => message.kind === "done" && message.name === name);
    thread.post({
      kind: "produce",
      name,
      partitionId,
      subpartitions: options.subpartitions ?? 1,
      maxBuffers: options.maxBuffers ?? 16,
      maxBuffersPerChannel: options.maxBuffersPerChannel ?? 10,
      records: options.records,
      payload: options.payload,
    });
    return done.then((message) => message.result as RunResult);
  }

  /** Thread `thread` reads subpartition `subpartitionIndex` of `partitionId`. */
  consume(
    thread: SlotThread,
    name: string,
    partitionId: string,
    options: {
      readonly subpartitionIndex?: number;
      readonly subpartitions?: number;
      readonly stallAfter?: number;
      readonly holdBuffers?: number;
    } = {},
  ): Promise<RunResult> {
    const done = thread.next((message) => message.kind === "done" && message.name === name);
    thread.post({
      kind: "consume",
      name,
      partitionId,
      subpartitionIndex: options.subpartitionIndex ?? 0,
      subpartitions: options.subpartitions ?? 1,
      ...(options.stallAfter === undefined ? {} : { stallAfter: options.stallAfter }),
      ...(options.holdBuffers === undefined ? {} : { holdBuffers: options.holdBuffers }),
    });
    return done.then((message) => message.result as RunResult);
  }

  /** The thread's view of the memory and its cross-thread channels now. */
  async pool(thread: SlotThread): Promise<ThreadMessage> {
    const reply = thread.next((message) => message.kind === "pool");
    thread.post({ kind: "pool" });
    return reply;
  }

  /**
   * Kills thread `thread` (as a crash would end it), then does what the runtime does: takes its
   * segments back and tells the other threads.
   */
  async kill(thread: SlotThread, why: string): Promise<void> {
    await thread.worker.terminate();
    this.threads.delete(thread.index);
    this.memory.reclaimThread(thread.index);
    for (const other of this.threads.values()) {
      other.post({ kind: "lost", thread: thread.index, message: why });
    }
  }

  /** Closes every thread's pool and provider, then ends the threads. */
  async close(): Promise<void> {
    for (const thread of this.threads.values()) {
      const closed = thread.next((message) => message.kind === "closed");
      thread.post({ kind: "close" });
      await closed;
    }
    await Promise.all([...this.threads.values()].map((thread) => thread.worker.terminate()));
    this.threads.clear();
  }

  /** Ends every thread at once, whatever state they are in (clean-up after a test). */
  async terminate(): Promise<void> {
    await Promise.all([...this.threads.values()].map((thread) => thread.worker.terminate()));
    this.threads.clear();
  }

  private route(from: SlotThread, message: ThreadMessage): void {
    if (message.kind === "request") {
      const request = message.request as { partitionId: string };
      const producer = this.threads.get(this.producers.get(request.partitionId) ?? -1);
      if (producer === undefined) {
        from.post({
          kind: "answer",
          id: message.id,
          ok: false,
          error: {
            code: "SLUICE_ERR_PARTITION_NOT_FOUND",
            name: "PartitionNotFoundError",
            message: `no thread produces ${request.partitionId}`,
          },
        });
        return;
      }
      const id = this.nextServe++;
      this.served.set(id, { from, id: message.id as number });
      producer.post({ kind: "serve", id, request });
    } else if (message.kind === "served") {
      const requester = this.served.get(message.id as number);
      this.served.delete(message.id as number);
      requester?.from.post({ ...message, kind: "answer", id: requester.id });
    }
  }
}
