/**
 * The jobs of the long-session test and what its processes report about themselves. Plain
 * JavaScript: the job manager's and the task managers' processes load it next to the compiled
 * packages, and run with `--expose-gc`.
 */
import { readdirSync } from "node:fs";
import { JobGraph, PollStatus } from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";

/** Numbers each source subtask writes. */
const NUMBERS = 8_000;

/**
 * Objects of the jobs this process ran, each with what it is, held weakly: once a job ended,
 * none of them may stay reachable.
 */
const tracked = [];

/** Remembers `objects` (named `kind`) of a job, weakly. */
export function track(kind, objects) {
  for (const object of objects) {
    if (object !== undefined && object !== null) tracked.push({ kind, ref: new WeakRef(object) });
  }
}

/** Tracks what a task holds: the task, its gates and its partitions. */
function trackTask(task) {
  track("Task", [task]);
  track("InputGate", task.gates);
  track("ResultPartitionWriter", task.partitions);
}

/** Writes 0..NUMBERS-1, yielding now and then so that checkpoints are taken meanwhile. */
export async function numbers(task) {
  trackTask(task);
  const writer = task.writer();
  for (let i = 0; i < NUMBERS; i++) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    else if (i % 1_000 === 0) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    writer.emit(i);
  }
  return NUMBERS;
}

/** Counts and sums what it reads; its checkpointed state is both. */
export async function sum(task) {
  trackTask(task);
  const state = { count: 0, sum: 0 };
  task.setCheckpointHandler({ snapshotState: () => state });
  const reader = task.reader();
  for (;;) {
    const status = reader.pollRecords((value) => {
      state.count++;
      state.sum += value;
    }, 512);
    if (status === PollStatus.END_OF_INPUT) return state;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

/**
 * Job `index` of the session: two sources feed two sums by hash, over pipelined partitions
 * (streaming) or blocking ones (batch: the sums start once the sources finished).
 */
export function sessionJob(index, batch) {
  const graph = new JobGraph(`session job ${index} (${batch ? "batch" : "streaming"})`);
  const source = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
  graph.connect(source, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
    ...(batch ? { partitionType: ResultPartitionType.BLOCKING } : {}),
  });
  return graph;
}

/**
 * What this process holds right after a full garbage collection: its heap, open files, active
 * resources (sockets, timers, ...), and how many tracked objects of ended jobs are still
 * reachable, by kind (call it once no job runs).
 */
export function footprint() {
  globalThis.gc();
  globalThis.gc();
  const reachable = {};
  let kept = 0;
  for (const entry of tracked) {
    if (entry.ref.deref() === undefined) continue;
    reachable[entry.kind] = (reachable[entry.kind] ?? 0) + 1;
    tracked[kept++] = entry;
  }
  // Collected ones are dropped: the tracking itself must not grow the heap it measures.
  tracked.length = kept;
  return {
    heapUsed: process.memoryUsage().heapUsed,
    fds: readdirSync("/proc/self/fd").length,
    handles: process.getActiveResourcesInfo().length,
    reachable,
  };
}
