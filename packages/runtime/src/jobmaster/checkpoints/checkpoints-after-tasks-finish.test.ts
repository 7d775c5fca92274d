/**
 * FLIP-147 and the checkpoint notifications end to end, on a local cluster: checkpoints go on
 * after a bounded branch finished (`execution.checkpointing.checkpoints-after-tasks-finish`), a
 * restore from such a checkpoint deploys the finished subtask finished, and a task with a
 * checkpoint listener is told of completed checkpoints and finishes only after a checkpoint of
 * its final state completed (Flink's StreamTaskFinalCheckpointsTest, the parts this runtime has).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../../io/record-reader.js";
import type { Task } from "../../taskexecutor/task.js";
import {
  checkpointingConfiguration,
  LocalCluster,
} from "../../taskexecutor/test-support/local-cluster.js";
import { emitFromOffset } from "../../taskexecutor/test-support/word-count.js";
import type { TaskInvokable } from "../../taskexecutor/user-code-registry.js";
import type { JobExecution } from "../job-execution.js";
import { JobGraph } from "../job-graph.js";
import { loadCompletedCheckpoint } from "./completed-checkpoint-loader.js";

const cluster = new LocalCluster();
let checkpointsDir: string;

/** What the test's invokables report and wait for (they run in this process). */
const world = {
  /** Set by the test: the long source may end. */
  releaseLongSource: false,
  /** Checkpoints completed when the bounded source's first attempt returned. */
  completedAtBoundedReturn: undefined as number | undefined,
  /** Attempts of the bounded source whose code ran, as `subtask#attempt`. */
  boundedRuns: [] as string[],
  /** Completion notifications the counter's listener handled, per attempt. */
  completed: [] as bigint[],
  /** Checkpoints the counter snapshotted after its input ended. */
  snapshotsAfterEnd: [] as bigint[],
  /** The counter's attempt 0 fails once this many checkpoints completed after the bounded end. */
  failCounterAt: undefined as number | undefined,
  countAtBoundedEnd: 0,
  /** The counter's first attempt throws in its first completion notification. */
  throwInListener: false,
  execution: undefined as JobExecution | undefined,
};

beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-flip147-test-"));
  world.releaseLongSource = false;
  world.boundedRuns = [];
  world.completedAtBoundedReturn = undefined;
  world.completed = [];
  world.snapshotsAfterEnd = [];
  world.failCounterAt = undefined;
  world.countAtBoundedEnd = Number.POSITIVE_INFINITY;
  world.throwInListener = false;
  world.execution = undefined;
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

function configuration(extra: Record<string, unknown> = {}) {
  return checkpointingConfiguration(checkpointsDir, 1, extra);
}

/** Emits `words` numbered words (state: its offset), running its mail between them. */
async function boundedSource(task: Task): Promise<number> {
  world.boundedRuns.push(`${task.subtaskIndex}#${task.attemptNumber}`);
  const words = task.configuration.words as number;
  const emitted = await emitFromOffset(
    task,
    (offset) => offset < words,
    (offset) => `b${offset % 7}`,
    (offset) => (offset % 50 === 0 ? task.yieldToMailbox() : undefined),
  );
  world.completedAtBoundedReturn ??=
    world.execution?.checkpointCoordinator?.numberOfCompletedCheckpoints;
  return emitted;
}

/** Emits a word a millisecond until the test releases it (state: its offset). */
async function longSource(task: Task): Promise<number> {
  return emitFromOffset(
    task,
    () => !world.releaseLongSource,
    (offset) => `l${offset % 5}`,
    () => task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1))),
  );
}

/** Counts words (state: its map) and, with `listen`, records its notifications. */
async function counter(task: Task): Promise<Record<string, number>> {
  const counts: Record<string, number> = { ...(task.restoredState as object | undefined) };
  let ended = false;
  task.setCheckpointHandler({
    snapshotState: (id) => {
      if (ended) world.snapshotsAfterEnd.push(id);
      return counts;
    },
  });
  if (task.configuration.listen === true) {
    task.setCheckpointListener({
      notifyCheckpointComplete: async (id) => {
        if (world.throwInListener && task.attemptNumber === 0) {
          throw new Error("the commit broke on purpose");
        }
        world.completed.push(id);
      },
    });
  }
  const failing = task.attemptNumber === 0 && world.failCounterAt !== undefined;
  const readers = task.gates.map((_, i) => task.reader<string>(i));
  const open = new Set(readers);
  while (open.size > 0) {
    let waiting = 0;
    for (const reader of [...open]) {
      const status = reader.pollRecords((word) => {
        counts[word] = (counts[word] ?? 0) + 1;
      }, 64);
      if (status === PollStatus.END_OF_INPUT) open.delete(reader);
      else if (status === PollStatus.NOTHING_AVAILABLE) waiting++;
    }
    if (failing) {
      const completed = world.execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
      if (completed >= world.countAtBoundedEnd + (world.failCounterAt ?? 0)) {
        throw new Error(`${task.name} broke on purpose`);
      }
    }
    if (open.size > 0 && waiting === open.size) {
      await Promise.race([...open].map((reader) => reader.getAvailableFuture()));
    } else {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }
  ended = true;
  return counts;
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = {
  bounded: boundedSource,
  long: longSource,
  count: counter,
};

/** `Bounded` (1 subtask, `words` words) and `Long` (1 subtask) → FORWARD/HASH → `Count`. */
function twoBranchGraph(words: number, listen = false): JobGraph {
  const graph = new JobGraph("bounded branch");
  const bounded = graph.addVertex({
    name: "Bounded",
    parallelism: 1,
    invokable: "bounded",
    configuration: { words },
  });
  const long = graph.addVertex({ name: "Long", parallelism: 1, invokable: "long" });
  const count = graph.addVertex({
    name: "Count",
    parallelism: 1,
    invokable: "count",
    configuration: { listen },
  });
  for (const source of [bounded, long]) {
    graph.connect(source, count, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
    });
  }
  return graph;
}

async function start(graph: JobGraph, config = configuration()): Promise<JobExecution> {
  const executor = await cluster.startExecutor(config, { invokables: INVOKABLES });
  const deployer = await cluster.startDeployer(config);
  const execution = await deployer.deploy(graph, () => executor);
  world.execution = execution;
  return execution;
}

/** Polls `condition` until it holds, failing after 20 s. */
async function eventually(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const stateOf = (execution: JobExecution, name: string) =>
  execution.executionVertices.find((v) => v.vertex.name === name)?.state;

describe("checkpoints after tasks finish (FLIP-147)", () => {
  it("testCheckpointsAfterTasksFinish: a job whose bounded branch finished keeps completing checkpoints", async () => {
    const graph = twoBranchGraph(300);
    const execution = await start(graph);
    const coordinator = execution.checkpointCoordinator;
    await eventually("the bounded source's code returned", () => world.boundedRuns.length > 0);
    await eventually(
      "the bounded source finished",
      () => stateOf(execution, "Bounded") === "FINISHED",
    );
    const atEnd = coordinator?.numberOfCompletedCheckpoints ?? 0;
    // Its code returned, then it stayed RUNNING to the coordinator (triggered, waited for) until
    // a checkpoint after its EndOfData completed: its final checkpoint.
    expect(world.completedAtBoundedReturn).toBeDefined();
    expect(atEnd).toBeGreaterThan(world.completedAtBoundedReturn ?? Number.POSITIVE_INFINITY);
    await eventually(
      "3 more checkpoints completed",
      () => (coordinator?.numberOfCompletedCheckpoints ?? 0) >= atEnd + 3,
    );
    // The newest checkpoint records the finished subtask and has no state of it.
    const latest = coordinator?.latestCompletedCheckpoint;
    const bounded = execution.executionVertices.find((v) => v.vertex.name === "Bounded");
    expect(latest?.finishedSubtasks).toHaveLength(1);
    expect(bounded && latest?.isFinished(bounded.vertex.id, 0)).toBe(true);
    expect(latest?.subtaskStates.map((s) => s.vertexName).sort()).toEqual(["Count", "Long"]);
    // Read back from its _metadata file (a new leader's restore): still finished, not re-run.
    const loaded = await loadCompletedCheckpoint(latest?.metadataPath as string, graph);
    expect(bounded && loaded.isFinished(bounded.vertex.id, 0)).toBe(true);
    expect(loaded.finishedSubtasks).toEqual(latest?.finishedSubtasks);
    world.releaseLongSource = true;
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    const counts = result.results.get("Count")?.[0] as Record<string, number>;
    const boundedWords = Object.entries(counts)
      .filter(([word]) => word.startsWith("b"))
      .reduce((sum, [, n]) => sum + n, 0);
    expect(boundedWords).toBe(300);
  });

  it("stops checkpointing once a task finished when checkpoints-after-tasks-finish is false", async () => {
    const config = configuration({
      "execution.checkpointing.checkpoints-after-tasks-finish": false,
    });
    const execution = await start(twoBranchGraph(300), config);
    const coordinator = execution.checkpointCoordinator;
    await eventually(
      "the bounded source finished",
      () => stateOf(execution, "Bounded") === "FINISHED",
    );
    // A checkpoint triggered before the end may still complete; none is triggered after it.
    await eventually(
      "no checkpoint is pending",
      () => coordinator?.numberOfPendingCheckpoints === 0,
    );
    const atEnd = coordinator?.numberOfCompletedCheckpoints ?? 0;
    // Ten intervals without a new checkpoint: the trigger is refused each time.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(coordinator?.numberOfCompletedCheckpoints).toBe(atEnd);
    world.releaseLongSource = true;
    expect((await execution.terminated).status).toBe("FINISHED");
  });

  it("a restore from a checkpoint taken after a subtask finished deploys it finished: it does not run again", async () => {
    world.failCounterAt = 2;
    const execution = await start(twoBranchGraph(300));
    await eventually(
      "the bounded source finished",
      () => stateOf(execution, "Bounded") === "FINISHED",
    );
    world.countAtBoundedEnd = execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
    await eventually("the job restarted", () =>
      execution.executionVertices.some(
        (v) => v.vertex.name === "Long" && v.attemptId.attemptNumber > 0 && v.state === "RUNNING",
      ),
    );
    world.releaseLongSource = true;
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    // Its first attempt ran; the restored one finished at once.
    expect(world.boundedRuns).toEqual(["0#0"]);
    const counts = result.results.get("Count")?.[0] as Record<string, number>;
    const boundedWords = Object.entries(counts)
      .filter(([word]) => word.startsWith("b"))
      .reduce((sum, [, n]) => sum + n, 0);
    expect(boundedWords).toBe(300);
  });
});

describe("checkpoint notifications and the final checkpoint (StreamTaskFinalCheckpointsTest)", () => {
  it("a task's listener is told of completed checkpoints, and the task finishes only after a checkpoint of its final state completed", async () => {
    const execution = await start(twoBranchGraph(200, true));
    const coordinator = execution.checkpointCoordinator;
    await eventually("2 checkpoints reached the listener", () => world.completed.length >= 2);
    world.releaseLongSource = true;
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    // In order, each one a checkpoint the coordinator completed.
    expect([...world.completed].sort((a, b) => Number(a - b))).toEqual(world.completed);
    expect(world.completed.length).toBeLessThanOrEqual(result.checkpoints.completed);
    // The counter took a checkpoint after its input ended (triggered at it, as its producers
    // had finished) and was told it completed before it finished.
    expect(world.snapshotsAfterEnd.length).toBeGreaterThanOrEqual(1);
    const final = world.snapshotsAfterEnd[0] as bigint;
    expect(world.completed.some((id) => id >= final)).toBe(true);
    expect(coordinator?.numberOfPendingCheckpoints).toBe(0);
  });

  it("a listener that throws fails the task, and the job fails over", async () => {
    world.throwInListener = true;
    const execution = await start(twoBranchGraph(200, true));
    await eventually(
      "the restarted counter was told of a checkpoint",
      () => world.completed.length >= 1,
    );
    world.releaseLongSource = true;
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBeGreaterThanOrEqual(1n);
  });
});
