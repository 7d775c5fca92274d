// The user code of the slot-thread tests, as a job module: slot threads load code by reference,
// and run JavaScript, so this is plain JavaScript over the built @sluice/runtime.
import { threadId } from "node:worker_threads";
import { PollStatus } from "@sluice/runtime";

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Word `i` of source subtask `subtask` (as the TypeScript tests' wordOf). */
const wordOf = (i, subtask) => `w${(i * 31 + subtask) % 97}`;

async function source(task) {
  const writer = task.writer();
  const { words: count, failOnThread, failAfter } = task.configuration;
  for (let i = 0; i < count; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    // On the thread the configuration names, it breaks midway, its partition holding buffers.
    if (threadId === failOnThread && i === failAfter) {
      throw new Error(`the source broke on purpose (thread ${threadId})`);
    }
    writer.emit(wordOf(i, task.subtaskIndex));
    if (i % 512 === 511) await turn();
  }
  return count;
}

async function count(task) {
  const counts = {};
  const reader = task.reader();
  for (;;) {
    const status = reader.pollRecords((word) => {
      counts[word] = (counts[word] ?? 0) + 1;
    }, 128);
    if (status === PollStatus.END_OF_INPUT) return counts;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await turn();
  }
}

/** Throws from its code: its task fails, its thread goes on. The error names the thread. */
async function fail() {
  await turn();
  throw new Error(`the task broke on purpose (thread ${threadId})`);
}

/** The id of the thread its slot runs on (the main-thread slot's is the task manager's). */
async function where() {
  return threadId;
}

/** Throws outside its task (from a timer): that kills its thread. */
async function crash(task) {
  setTimeout(() => {
    throw new Error("the task crashed its thread on purpose");
  }, 10);
  await new Promise((resolve) => task.signal.addEventListener("abort", resolve, { once: true }));
  return "not reached";
}

/** Waits `ms` (or until canceled), then finishes with "done". */
async function wait(task) {
  await new Promise((resolve) => {
    const timer = setTimeout(resolve, task.configuration.ms);
    task.signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return "done";
}

/**
 * Takes checkpoints (of no state) and records what its checkpoint listener is told; finishes
 * with that record once it was told of a subsumed checkpoint.
 */
async function listen(task) {
  const told = [];
  task.setCheckpointHandler({ snapshotState: () => ({}) });
  task.setCheckpointListener({
    notifyCheckpointComplete: (id) => told.push(`complete ${id}`),
    notifyCheckpointAborted: (id) => told.push(`abort ${id}`),
    notifyCheckpointSubsumed: (id) => told.push(`subsume ${id}`),
  });
  while (!told.some((entry) => entry.startsWith("subsume"))) {
    await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 5)));
  }
  return told;
}

/** Never ends and never looks at task.signal: a cancellation must give it up. */
async function stuck() {
  await new Promise(() => {});
}

/** The young generation limit of the thread it runs on, in MiB. */
async function youngGeneration() {
  const { resourceLimits } = await import("node:worker_threads");
  return resourceLimits.maxYoungGenerationSizeMb;
}

export default {
  userCode: {
    invokables: { source, count, fail, crash, wait, stuck, listen, youngGeneration, where },
    messages: {
      // On the thread the payload names, a reply the slot cannot post (a function): an error of
      // the slot's own code, outside any task. Null elsewhere.
      unpostable: (payload) => (payload.thread === threadId ? () => "not data" : null),
    },
  },
};
