import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage, METADATA_FILE_NAME } from "../checkpointing/fs-checkpoint-storage.js";
import { PollStatus } from "../io/record-reader.js";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import type { FileStateHandle } from "../messages/file-state-handle.js";
import type { Task } from "../taskexecutor/task.js";
import type { TaskExecutor } from "../taskexecutor/task-executor.js";
import {
  checkpointingConfiguration,
  LocalCluster,
} from "../taskexecutor/test-support/local-cluster.js";
import {
  expectedCounts,
  wordCountGraph as sharedWordCountGraph,
  totals,
  wordOf,
} from "../taskexecutor/test-support/word-count.js";
import type { TaskInvokable } from "../taskexecutor/user-code-registry.js";
import { CheckpointStatsTracker } from "./checkpoints/checkpoint-stats-tracker.js";
import type { JobExecution } from "./job-execution.js";
import type { JobGraph } from "./job-graph.js";
import type { JobResult } from "./job-result.js";

const cluster = new LocalCluster();
let checkpointsDir: string;

beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-checkpoints-test-"));
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/** Checkpoints every 50 ms into this test's folder; up to 2 restarts 10 ms apart. */
function configuration(extra: Record<string, unknown> = {}) {
  return checkpointingConfiguration(checkpointsDir, 2, extra);
}

/**
 * A source whose state is its offset: emits words `offset..words-1` in batches of
 * `pace[subtask]` records a millisecond apart, and runs its mail (checkpoint triggers) after
 * every `mailEvery[subtask]`-th batch. The sources thus send their barriers at different
 * points, with records of the other source in between, as sources on different machines do.
 * With `holdFirstAttempt`, its first attempt then keeps running its mail until it is canceled:
 * checkpoints go on however fast the words went (none is triggered once a source finished),
 * so a failure planned for a later checkpoint of that attempt always comes.
 */
async function pacedSource(task: Task): Promise<number> {
  const words = task.configuration.words as number;
  const pace = (task.configuration.pace as number[])[task.subtaskIndex] as number;
  const mailEvery = (task.configuration.mailEvery as number[])[task.subtaskIndex] as number;
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<string>();
  let inBatch = 0;
  let batches = 0;
  while (offset < words) {
    while (!writer.isAvailable()) await writer.getAvailableFuture();
    if (inBatch === pace) {
      inBatch = 0;
      const paused = new Promise((resolve) => setTimeout(resolve, 1));
      if (++batches % mailEvery === 0) await task.yieldToMailbox(paused);
      else await paused;
    }
    if (task.signal.aborted) throw task.signal.reason;
    writer.emit(wordOf(offset, task.subtaskIndex));
    offset++;
    inBatch++;
  }
  if (task.configuration.holdFirstAttempt === true && task.attemptNumber === 0) {
    while (!task.signal.aborted) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    throw task.signal.reason;
  }
  return offset;
}

/**
 * A counter whose state is its map. Configured failures, on the attempts listed in
 * `failOnAttempts` of subtask 0 only: `failAfterSnapshots` (throw once it took that many
 * snapshots in this attempt and counted 500 words more), `throwInSnapshot` (its n-th snapshot
 * throws).
 */
async function checkpointedCount(task: Task): Promise<Record<string, number>> {
  const { failOnAttempts, failAfterSnapshots, throwInSnapshot } = task.configuration as {
    failOnAttempts?: number[];
    failAfterSnapshots?: number;
    throwInSnapshot?: number;
  };
  const failing = task.subtaskIndex === 0 && (failOnAttempts ?? []).includes(task.attemptNumber);
  const counts: Record<string, number> = {
    ...(task.restoredState as Record<string, number> | undefined),
  };
  let snapshots = 0;
  task.setCheckpointHandler({
    snapshotState: () => {
      snapshots++;
      if (failing && snapshots === throwInSnapshot) throw new Error("snapshot broke on purpose");
      return counts;
    },
  });
  restoredChannelStateBytes.push(task.restoredChannelStateBytes);
  // `slow`: a few records per millisecond, so the sources are back-pressured.
  const slow = task.configuration.slow === true;
  let countedSince = 0;
  const reader = task.reader<string>();
  for (;;) {
    const status = reader.pollRecords(
      (word) => {
        counts[word] = (counts[word] ?? 0) + 1;
        if (failing && failAfterSnapshots !== undefined && snapshots >= failAfterSnapshots) {
          if (++countedSince > 500) throw new Error(`${task.name} broke on purpose`);
        }
      },
      slow ? 16 : 256,
    );
    if (status === PollStatus.END_OF_INPUT) return counts;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else if (slow) await new Promise((resolve) => setTimeout(resolve, 1));
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

/** What each counter attempt was restored with: bytes of channel state. */
const restoredChannelStateBytes: number[] = [];

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = {
  source: pacedSource,
  count: checkpointedCount,
};

function startExecutor(config = configuration()): Promise<TaskExecutor> {
  return cluster.startExecutor(config, { invokables: INVOKABLES });
}

/** `Source` (2 subtasks, paced differently) → HASH by word → `Count` (2 subtasks). */
function wordCountGraph(
  words: number,
  countConfig: Record<string, number | number[] | boolean> = {},
  sourceConfig: Record<string, boolean> = {},
) {
  return sharedWordCountGraph(
    "checkpointed word count",
    { words, pace: [150, 90], mailEvery: [1, 10], ...sourceConfig },
    countConfig,
  );
}

/** The job finished after one restart from a checkpoint and counted each of `words` words once. */
function expectRecoveredOnce(result: JobResult, words: number): void {
  expect(result.error).toBeUndefined();
  expect(result.status).toBe("FINISHED");
  expect(result.restarts).toBe(1);
  expect(result.checkpoints.restoredFrom).toBeGreaterThanOrEqual(1n);
  expect(totals(result.results)).toEqual(expectedCounts(words, 2));
}

async function runOn(
  executor: TaskExecutor,
  graph: JobGraph,
  config = configuration(),
): Promise<JobExecution> {
  const deployer = await cluster.startDeployer(config);
  return deployer.deploy(graph, () => executor);
}

/** Polls `condition` until it holds, failing after 10 s. */
async function eventually(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe("a checkpointing job", () => {
  it("completes checkpoints every 50 ms, reports every task's figures, and deletes its files at the end", async () => {
    const executor = await startExecutor();
    const execution = await runOn(executor, wordCountGraph(40_000));
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(totals(result.results)).toEqual(expectedCounts(40_000, 2));
    expect(result.restarts).toBe(0);
    expect(result.checkpoints.restoredFrom).toBeUndefined();
    expect(result.checkpoints.completed).toBeGreaterThanOrEqual(2);
    const latest = result.checkpoints.latest;
    // Every subtask is in it: with a snapshot, or (checkpoints go on after tasks finish) as a
    // source that had finished when it was triggered.
    const finished = (latest?.finishedSubtasks ?? []).map((s) => `Source/${s.subtaskIndex}`);
    expect(
      [
        ...(latest?.subtaskStates.map((s) => `${s.vertexName}/${s.subtaskIndex}`) ?? []),
        ...finished,
      ].sort(),
    ).toEqual(["Count/0", "Count/1", "Source/0", "Source/1"]);
    for (const state of latest?.subtaskStates ?? []) {
      expect(state.stateHandle?.size).toBeGreaterThan(0);
      expect(state.metrics.alignmentDurationNanos).toBeGreaterThanOrEqual(0);
      expect(state.metrics.checkpointStartDelayNanos).toBeGreaterThanOrEqual(0);
    }
    // The job's files are gone (retention NO_EXTERNALIZED_CHECKPOINTS), nothing else was left.
    expect(await readdir(checkpointsDir)).toEqual([]);
  });

  it("keeps the newest checkpoint with its _metadata and snapshot files when retained", async () => {
    const config = configuration({
      "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    });
    const executor = await startExecutor(config);
    const execution = await runOn(executor, wordCountGraph(30_000), config);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    const latest = result.checkpoints.latest;
    expect(latest).toBeDefined();
    const jobDir = path.join(checkpointsDir, result.jobId.toString());
    // state.checkpoints.num-retained 1: only the newest checkpoint's folder is left.
    expect(await readdir(jobDir)).toEqual([`chk-${latest?.checkpointId}`]);
    const files = (await readdir(path.join(jobDir, `chk-${latest?.checkpointId}`))).sort();
    // A snapshot of each subtask that had not finished when it was triggered, and _metadata.
    const snapshots = latest?.subtaskStates.length ?? 0;
    expect(snapshots + (latest?.finishedSubtasks.length ?? 0)).toBe(4);
    expect(files).toHaveLength(snapshots + 1);
    expect(files).toContain(METADATA_FILE_NAME);
    const metadata = await FsCheckpointStorage.readMetadata(latest?.metadataPath as string);
    expect(metadata).toMatchObject({
      version: 2,
      jobId: result.jobId.toString(),
      checkpointId: String(latest?.checkpointId),
    });
    expect(metadata.tasks).toHaveLength(snapshots);
    expect(metadata.finishedTasks).toHaveLength(4 - snapshots);
    for (const task of metadata.tasks as unknown as {
      vertexName: string;
      stateHandle: FileStateHandle;
    }[]) {
      const state = await FsCheckpointStorage.readTaskState(task.stateHandle, {
        jobId: result.jobId,
        checkpointId: latest?.checkpointId as bigint,
        taskName: task.vertexName,
      });
      expect(state).toBeDefined();
    }
  });
});

describe("a suspended job (its job manager lost its leadership)", () => {
  it("cancels every task and ends SUSPENDED, keeping its retained checkpoints for the job manager that takes it over", async () => {
    const executor = await startExecutor();
    const execution = await runOn(
      executor,
      wordCountGraph(2_000, {}, { holdFirstAttempt: true }),
      configuration({ "state.checkpoints.num-retained": 2 }),
    );
    await eventually(
      "two completed checkpoints",
      () => (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 2,
    );
    const cause = new Error("the job manager lost its leadership");
    execution.suspend(cause);
    const result = await execution.terminated;
    expect(result.status).toBe("SUSPENDED");
    expect(result.error).toBe(cause);
    expect(result.restarts).toBe(0);
    expect(execution.executionVertices.every((v) => v.state === "CANCELED")).toBe(true);
    // Retention NO_EXTERNALIZED_CHECKPOINTS would delete them at a job's end; a suspended job
    // is not at its end.
    const retained = execution.checkpointCoordinator?.completedCheckpoints ?? [];
    expect(retained).toHaveLength(2);
    for (const checkpoint of retained) {
      expect((await stat(checkpoint.metadataPath)).isFile()).toBe(true);
    }
    // Suspending again, or failing it now, changes nothing.
    execution.suspend(new Error("again"));
    execution.fail(new Error("too late"));
    expect(execution.status).toBe("SUSPENDED");
  });
});

describe("recovery from the last completed checkpoint", () => {
  it("restarts from an unaligned checkpoint taken under back-pressure, replaying its in-flight data", async () => {
    restoredChannelStateBytes.length = 0;
    const config = configuration({ "execution.checkpointing.unaligned.enabled": true });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(20_000, {
      failOnAttempts: [0],
      failAfterSnapshots: 2,
      slow: true,
    });
    const execution = await runOn(executor, graph, config);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(totals(result.results)).toEqual(expectedCounts(20_000, 2));
    // The checkpoint restored from held in-flight data, which was replayed.
    expect(restoredChannelStateBytes.some((bytes) => bytes > 0)).toBe(true);
    expect(await readdir(checkpointsDir)).toEqual([]);
  });

  it("restarts every task after one failed, and counts every word exactly once", async () => {
    const executor = await startExecutor();
    const graph = wordCountGraph(60_000, { failOnAttempts: [0], failAfterSnapshots: 2 });
    const execution = await runOn(executor, graph);
    const result = await execution.terminated;
    expectRecoveredOnce(result, 60_000);
    expect(execution.executionVertices.map((e) => e.name)).toContain("Count (1/2)#1");
    expect(await readdir(checkpointsDir)).toEqual([]);
  });

  it("reports Flink's checkpoint statistics on the job's group while it runs, and the restore it made", async () => {
    const executor = await startExecutor();
    const deployer = await cluster.startDeployer(configuration());
    const graph = wordCountGraph(60_000, { failOnAttempts: [0], failAfterSnapshots: 2 });
    const startedAt = Date.now();
    const execution = await deployer.deploy(graph, () => executor);
    const jobMetric = (name: string) =>
      deployer.metricGroup.registry
        .dump()
        .find((m) => m.logicalScope === "jobmanager.job" && m.name === name)?.value;
    expect(jobMetric("lastCheckpointDuration")).toBe(-1);
    expect(jobMetric("lastCheckpointRestoreTimestamp")).toBe(-1);
    await eventually(
      "a checkpoint completed",
      () => Number(jobMetric("numberOfCompletedCheckpoints")) >= 1,
    );
    expect(Number(jobMetric("lastCheckpointSize"))).toBeGreaterThan(0);
    expect(Number(jobMetric("lastCheckpointDuration"))).toBeGreaterThanOrEqual(0);
    expect(Number(jobMetric("lastCompletedCheckpointId"))).toBeGreaterThanOrEqual(1);
    expect(Number(jobMetric("totalNumberOfCheckpoints"))).toBeGreaterThanOrEqual(
      Number(jobMetric("numberOfCompletedCheckpoints")),
    );
    const result = await execution.terminated;
    expect(result.restarts).toBe(1);
    // The group closed with the job; the tracker still reads the ended job's figures.
    expect(jobMetric("numberOfCompletedCheckpoints")).toBeUndefined();
    const stats = new CheckpointStatsTracker(execution).snapshot();
    expect(stats.numberOfCompletedCheckpoints).toBe(result.checkpoints.completed);
    expect(stats.numberOfFailedCheckpoints).toBe(result.checkpoints.aborted);
    expect(stats.lastRestoredCheckpointId).toBe(Number(result.checkpoints.restoredFrom));
    expect(stats.lastCheckpointRestoreTimestamp).toBeGreaterThanOrEqual(startedAt);
    expect(stats.lastCheckpointRestoreTimestamp).toBeLessThanOrEqual(Date.now());
    expect(stats.lastCheckpointSize).toBe(result.checkpoints.latest?.stateSize);
    expect(stats.lastCheckpointPersistedData).toBe(0);
  });

  it("loses no word in at-least-once mode, though some may be counted twice", async () => {
    const config = configuration({ "execution.checkpointing.mode": "AT_LEAST_ONCE" });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(60_000, { failOnAttempts: [0], failAfterSnapshots: 2 });
    const execution = await runOn(executor, graph, config);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBeGreaterThanOrEqual(1n);
    const counted = totals(result.results);
    for (const [word, n] of expectedCounts(60_000, 2)) {
      expect(counted.get(word) ?? 0, word).toBeGreaterThanOrEqual(n);
    }
  });

  it("fails the job once the restart attempts are used up, naming the last failure, and tells its status listener of each step with its cause", async () => {
    // A global failover (the job's RESTARTING step); a region failover keeps the job RUNNING.
    const config = configuration({
      "restart-strategy.fixed-delay.attempts": 1,
      "jobmanager.execution.failover-strategy": "full",
    });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(60_000, { failOnAttempts: [0, 1], failAfterSnapshots: 0 });
    const deployer = await cluster.startDeployer(config);
    const changes: string[] = [];
    const execution = await deployer.deploy(graph, () => executor, {
      statusListener: (status, cause) => changes.push(`${status}: ${cause?.message ?? "-"}`),
    });
    const result = await execution.terminated;
    expect(changes).toEqual([
      "RUNNING: -",
      expect.stringMatching(/^RESTARTING: .*Count \(1\/2\)#0 broke on purpose/),
      "RUNNING: -",
      expect.stringMatching(/^FAILING: .*Count \(1\/2\)#1 broke on purpose/),
      expect.stringMatching(/^FAILED: .*Count \(1\/2\)#1 broke on purpose/),
    ]);
    expect(result.status).toBe("FAILED");
    expect(result.restarts).toBe(1);
    expect(result.failedTask).toBe("Count (1/2)#1");
    expect(result.error?.message).toMatch(/Count \(1\/2\)#1 broke on purpose/);
    expect(executor.runningTasks).toEqual([]);
  });

  it("fails at once without a restart strategy", async () => {
    const config = configuration({ "restart-strategy.type": "none" });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(60_000, { failOnAttempts: [0], failAfterSnapshots: 0 });
    const result = await (await runOn(executor, graph, config)).terminated;
    expect(result.status).toBe("FAILED");
    expect(result.restarts).toBe(0);
  });

  it("restarts onto a replacement TaskExecutor when one is lost, never reusing the lost one", async () => {
    const lost = await startExecutor();
    let replacement: Promise<TaskExecutor> | undefined;
    const deployer = await cluster.startDeployer(configuration());
    const execution = await deployer.deploy(wordCountGraph(60_000), (_vertex, _i, context) => {
      if (!context.isLost(lost)) return lost;
      replacement ??= startExecutor();
      return replacement;
    });
    const coordinator = execution.checkpointCoordinator;
    await eventually(
      "a checkpoint completed",
      () => coordinator?.latestCompletedCheckpoint !== undefined,
    );
    execution.notifyTaskExecutorLost(lost, new Error("its process died"));
    await lost.close();
    const result = await execution.terminated;
    expectRecoveredOnce(result, 60_000);
    const placedOn = await replacement;
    for (const vertex of execution.executionVertices) expect(vertex.gateway).toBe(placedOn);
  });

  it("fails the job when the placement returns a lost TaskExecutor", async () => {
    const executor = await startExecutor();
    const deployer = await cluster.startDeployer(configuration());
    const execution = await deployer.deploy(wordCountGraph(60_000), () => executor);
    await eventually("every task runs", () =>
      execution.executionVertices.every((e) => e.state === "RUNNING"),
    );
    execution.notifyTaskExecutorLost(executor, new Error("its heartbeats stopped"));
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error).toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
      message: expect.stringMatching(/was lost; it must return a replacement/),
    });
  });
});

describe("failed checkpoints", () => {
  it("aborts a checkpoint a task declines, and completes later ones", async () => {
    const config = configuration({ "execution.checkpointing.tolerable-failed-checkpoints": 5 });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(40_000, { failOnAttempts: [0], throwInSnapshot: 1 });
    const execution = await runOn(executor, graph, config);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(0);
    expect(result.checkpoints.aborted).toBeGreaterThanOrEqual(1);
    expect(result.checkpoints.completed).toBeGreaterThanOrEqual(1);
    expect(execution.checkpointCoordinator?.lastCheckpointFailure).toMatchObject({
      checkpointId: 1n,
      reason: CheckpointFailureReason.CHECKPOINT_DECLINED,
      error: { code: ErrorCodes.CHECKPOINT, message: expect.stringMatching(/broke on purpose/) },
    });
    expect(totals(result.results)).toEqual(expectedCounts(40_000, 2));
  });

  it("fails over when more checkpoints fail in a row than tolerated, and recovers", async () => {
    const executor = await startExecutor();
    const graph = wordCountGraph(
      40_000,
      { failOnAttempts: [0], throwInSnapshot: 2 },
      { holdFirstAttempt: true },
    );
    const execution = await runOn(executor, graph);
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBe(1n);
    expect(totals(result.results)).toEqual(expectedCounts(40_000, 2));
  });
});

/** How a test damages a snapshot file of the checkpoint a restart is about to restore. */
const DAMAGES = {
  deleted: (file: string) => rm(file),
  emptied: (file: string) => writeFile(file, ""),
  truncated: async (file: string) => truncate(file, Math.floor((await stat(file)).size / 2)),
  // One count changed, the file still valid JSON of the same length.
  altered: async (file: string) => {
    const text = await readFile(file, "utf8");
    // The last count of the counter's map, which closes the state and the envelope.
    const at = text.search(/\d(?=\}+$)/);
    if (at < 0) throw new Error(`no count at the end of ${file}`);
    const digit = Number(text[at]);
    await writeFile(
      file,
      `${text.slice(0, at)}${digit === 9 ? 8 : digit + 1}${text.slice(at + 1)}`,
    );
  },
} as const;

/**
 * Runs the word count with a counter that fails once it took 3 snapshots, and damages Count
 * (1/2)'s snapshot of the latest completed checkpoint while the job waits to restart. Returns
 * the run's result, the damaged checkpoint and file, and the checkpoint warnings printed.
 */
async function restartOntoDamagedCheckpoint(
  damage: (file: string) => Promise<unknown>,
  extra: Record<string, unknown> = {},
) {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => {
    if (warning.name === "SluiceCheckpointWarning") warnings.push(warning.message);
  };
  process.on("warning", onWarning);
  try {
    const config = configuration({
      "restart-strategy.fixed-delay.attempts": 5,
      "restart-strategy.fixed-delay.delay": "300ms",
      // Waited for as RESTARTING below, the status of a global failover.
      "jobmanager.execution.failover-strategy": "full",
      ...extra,
    });
    const executor = await startExecutor(config);
    const graph = wordCountGraph(80_000, { failOnAttempts: [0], failAfterSnapshots: 3 });
    const execution = await runOn(executor, graph, config);
    const coordinator = execution.checkpointCoordinator;
    // Once restarting, the checkpoint it restores is fixed: no checkpoint completes any more.
    await eventually("the job to wait for its restart", () => execution.status === "RESTARTING");
    const damaged = coordinator?.latestCompletedCheckpoint;
    const file = damaged?.subtaskStates.find(
      (s) => s.vertexName === "Count" && s.subtaskIndex === 0,
    )?.stateHandle?.path as string;
    await damage(file);
    const result = await execution.terminated;
    // Warnings are emitted on the next tick.
    await new Promise((resolve) => setImmediate(resolve));
    return { result, damaged, file, warnings, coordinator, executor };
  } finally {
    process.off("warning", onWarning);
  }
}

describe("a damaged checkpoint", () => {
  for (const [kind, damage] of Object.entries(DAMAGES)) {
    it(`is never restored again once a snapshot of it is found ${kind}: the restart falls back to the previous retained checkpoint, printing why`, async () => {
      const { result, damaged, file, warnings, coordinator } = await restartOntoDamagedCheckpoint(
        damage,
        { "state.checkpoints.num-retained": 3 },
      );
      expect(result.error).toBeUndefined();
      expect(result.status).toBe("FINISHED");
      expect(totals(result.results)).toEqual(expectedCounts(80_000, 2));
      const damagedId = damaged?.checkpointId as bigint;
      expect(result.checkpoints.restoredFrom).toBeLessThan(damagedId);
      expect(coordinator?.unusableCheckpoints.map((c) => c.checkpointId)).toEqual([damagedId]);
      // Two restarts: the one that found the damage, and the one onto the older checkpoint.
      expect(result.restarts).toBe(2);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toContain(
        `restoring checkpoint ${damagedId} failed, falling back to checkpoint ${result.checkpoints.restoredFrom}`,
      );
      expect(warnings[0]).toContain(file);
    });
  }

  it("fails the job with SLUICE_ERR_CHECKPOINT naming the file when no older checkpoint is retained", async () => {
    const { result, damaged, file, warnings, executor } = await restartOntoDamagedCheckpoint(
      DAMAGES.truncated,
    );
    expect(result.status).toBe("FAILED");
    expect(result.restarts).toBe(1);
    expect(result.error).toMatchObject({ code: ErrorCodes.CHECKPOINT });
    expect(result.error?.message).toContain(
      `checkpoint ${damaged?.checkpointId} is unreadable and no older retained checkpoint is left`,
    );
    expect(result.error?.message).toContain(file);
    expect(result.failedTask).toBe("Count (1/2)#1");
    expect(warnings.some((w) => w.includes("no older retained checkpoint is left"))).toBe(true);
    expect(executor.runningTasks).toEqual([]);
  });
});
