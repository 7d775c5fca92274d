/**
 * Savepoints and stop-with-savepoint of a keyed word count written at the JobGraph level (its
 * counters keep their counts in a KeyedStateBackend), on a local cluster, and restores from a
 * savepoint at other parallelisms. The tests are Flink's SavepointITCase cases, named after them.
 */
import { mkdir, mkdtemp, readdir, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, StopMode } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage, METADATA_FILE_NAME } from "../checkpointing/fs-checkpoint-storage.js";
import type { TaskExecutor } from "../taskexecutor/task-executor.js";
import {
  keyedWordCount,
  keyedWordCountInvokables,
  keyedWordCountWorld,
} from "../taskexecutor/test-support/keyed-word-count.js";
import {
  checkpointingConfiguration,
  LocalCluster,
  localConfiguration,
} from "../taskexecutor/test-support/local-cluster.js";
import { expectedCounts } from "../taskexecutor/test-support/word-count.js";
import type { DeployOptions } from "./job-deployer.js";
import type { JobExecution } from "./job-execution.js";
import { JobGraph } from "./job-graph.js";
import type { JobResult } from "./job-result.js";

const cluster = new LocalCluster();
let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-savepoints-"));
  world = keyedWordCountWorld();
});
afterEach(async () => {
  await cluster.close();
  await rm(base, { recursive: true, force: true });
});

const WORDS = 30_000;
let world = keyedWordCountWorld();
const wordCount = keyedWordCount;

const checkpoints = () => path.join(base, "checkpoints");
const savepoints = () => path.join(base, "savepoints");

function configuration(extra: Record<string, unknown> = {}) {
  return checkpointingConfiguration(checkpoints(), 3, {
    "state.savepoints.dir": savepoints(),
    ...extra,
  });
}

let executor: TaskExecutor;
async function run(graph: JobGraph, options: DeployOptions = {}): Promise<JobExecution> {
  const config = configuration();
  executor ??= await cluster.startExecutor(config, {
    invokables: keyedWordCountInvokables(world),
  });
  const deployer = await cluster.startDeployer(config);
  return deployer.deploy(graph, () => executor, options);
}
beforeEach(() => {
  executor = undefined as unknown as TaskExecutor;
});

/** The counts every Count subtask returned, summed per word; a word counted twice fails. */
function countsOf(result: JobResult): Map<string, number> {
  expect(result.status, String(result.error?.stack)).toBe("FINISHED");
  const total = new Map<string, number>();
  for (const partial of result.results.get("Count") ?? []) {
    for (const [word, n] of Object.entries((partial ?? {}) as Record<string, number>)) {
      expect(total.has(word), `${word} counted by two subtasks`).toBe(false);
      total.set(word, n);
    }
  }
  return total;
}

/** Waits until the job processed `words` more words than now and a checkpoint completed. */
async function progress(execution: JobExecution, words: number): Promise<void> {
  const target = world.processed + words;
  await waitFor(
    () =>
      world.processed >= target &&
      (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 1,
    { what: `${words} more words counted`, timeoutMs: 30_000 },
  );
}

describe("savepoints (Flink's SavepointITCase)", () => {
  it("testTriggerSavepointAndResumeWithFileBasedCheckpointsAndRelocateBasePath: a savepoint of a running job is a folder of its own whose _metadata names its files relatively; moved elsewhere, a new job resumes from it exactly, and neither job deletes it", async () => {
    const first = await run(wordCount(2));
    await progress(first, 3_000);
    const location = await first.triggerSavepoint();
    // The job goes on after a savepoint.
    expect(first.status).toBe("RUNNING");
    expect(path.dirname(location)).toBe(savepoints());
    expect(path.basename(location)).toMatch(
      new RegExp(`^savepoint-${first.jobId.toString().slice(0, 6)}-[0-9a-f]{12}$`),
    );
    const metadata = await FsCheckpointStorage.readMetadata(
      path.join(location, METADATA_FILE_NAME),
    );
    expect(metadata.snapshotType).toBe("SAVEPOINT");
    const tasks = metadata.tasks as { stateHandle: { path: string } | null }[];
    expect(tasks).toHaveLength(4);
    for (const task of tasks) {
      expect(task.stateHandle?.path).toMatch(/^[^/\\]+\.json$/);
    }
    expect(metadata.vertices).toEqual([
      expect.objectContaining({ vertexName: "Source", parallelism: 2, maxParallelism: 128 }),
      expect.objectContaining({ vertexName: "Count", parallelism: 2, maxParallelism: 128 }),
    ]);
    // A savepoint is not a checkpoint the job restores or retains.
    expect(
      first.checkpointCoordinator?.completedCheckpoints.map((c) => c.metadataPath),
    ).not.toContain(path.join(location, METADATA_FILE_NAME));
    first.cancel();
    expect((await first.terminated).status).toBe("CANCELED");

    const moved = path.join(base, "moved", path.basename(location));
    await mkdir(path.dirname(moved), { recursive: true });
    await rename(location, moved);
    const second = await run(wordCount(2), { savepointRestore: { path: moved } });
    const result = await second.terminated;
    expect(countsOf(result)).toEqual(expectedCounts(WORDS, 2));
    expect(result.checkpoints.restoredFrom).toBe(BigInt(metadata.checkpointId as string));
    // Checkpoint ids go on after the savepoint's.
    expect(result.checkpoints.latest?.checkpointId ?? 0n).toBeGreaterThan(
      BigInt(metadata.checkpointId as string),
    );
    expect((await stat(path.join(moved, METADATA_FILE_NAME))).isFile()).toBe(true);
  }, 90_000);

  it("testTriggerSavepointWithCheckpointingDisabled: a job that takes no checkpoints refuses a savepoint, naming why", async () => {
    const config = localConfiguration();
    const executor = await cluster.startExecutor(config, {
      invokables: keyedWordCountInvokables(world),
    });
    const deployer = await cluster.startDeployer(config);
    const execution = await deployer.deploy(wordCount(1), () => executor);
    await expect(execution.triggerSavepoint(savepoints())).rejects.toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
      message: expect.stringContaining(
        "takes no checkpoints (execution.checkpointing.interval is unset)",
      ),
    });
    await expect(execution.stopWithSavepoint(savepoints())).rejects.toMatchObject({
      code: ErrorCodes.ILLEGAL_STATE,
    });
    execution.cancel();
    await execution.terminated;
  });

  it("testSubmitWithUnknownSavepointPath: a job to start from a savepoint that does not exist is not deployed, and the error names the path", async () => {
    const missing = path.join(base, "no-such-savepoint");
    await expect(run(wordCount(2), { savepointRestore: { path: missing } })).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining(missing),
    });
  });
});

describe("stop-with-savepoint (Flink's SavepointITCase)", () => {
  it("testStopWithSavepointForFlip27SourceWithoutDrain: the sources stop, the counters' input ends without drain (they emit nothing), and the job ends FINISHED with the savepoint", async () => {
    const execution = await run(wordCount(2));
    await progress(execution, 3_000);
    const location = await execution.stopWithSavepoint(undefined, { drain: false });
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect([...world.inputEnded.values()]).toEqual([StopMode.NO_DRAIN, StopMode.NO_DRAIN]);
    // No counter flushed its counts: what it would emit at the end stays in the savepoint.
    expect(result.results.get("Count")).toEqual([undefined, undefined]);
    expect(world.processed).toBeLessThan(2 * WORDS);
    const metadata = await FsCheckpointStorage.readMetadata(
      path.join(location, METADATA_FILE_NAME),
    );
    expect(metadata.snapshotType).toBe("SAVEPOINT_SUSPEND");
    // The savepoint holds the counters' state of every word they counted, once.
    const resumed = await run(wordCount(2), { savepointRestore: { path: location } });
    expect(countsOf(await resumed.terminated)).toEqual(expectedCounts(WORDS, 2));
  }, 90_000);

  it("testStopWithSavepointForFlip27SourceWithDrain and testStopWithSavepointWithDrainCallsFinishBeforeSnapshotState: with drain the counters end their input (and emit) before they snapshot the savepoint", async () => {
    const execution = await run(wordCount(2));
    await progress(execution, 3_000);
    const location = await execution.stopWithSavepoint(undefined, { drain: true });
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect([...world.inputEnded.values()]).toEqual([StopMode.DRAIN, StopMode.DRAIN]);
    const metadata = await FsCheckpointStorage.readMetadata(
      path.join(location, METADATA_FILE_NAME),
    );
    expect(metadata.snapshotType).toBe("SAVEPOINT_TERMINATE");
    expect(world.endedBeforeSnapshot.get(BigInt(metadata.checkpointId as string))).toBe(true);
    // Drained: the counters returned what they counted until the stop.
    const counted = [...countsOf(result).values()].reduce((sum, n) => sum + n, 0);
    expect(counted).toBe(world.processed);
  }, 90_000);

  it("resumes a job stopped at parallelism 2 at 3 and then at 1: every key's count exactly once", async () => {
    const first = await run(wordCount(2));
    await progress(first, 3_000);
    const atTwo = await first.stopWithSavepoint();
    expect((await first.terminated).status).toBe("FINISHED");

    const second = await run(wordCount(3), { savepointRestore: { path: atTwo } });
    await progress(second, 3_000);
    const atThree = await second.stopWithSavepoint();
    expect((await second.terminated).status).toBe("FINISHED");
    const metadata = await FsCheckpointStorage.readMetadata(path.join(atThree, METADATA_FILE_NAME));
    expect(metadata.vertices).toContainEqual(
      expect.objectContaining({ vertexName: "Count", parallelism: 3 }),
    );

    const third = await run(wordCount(1), { savepointRestore: { path: atThree } });
    expect(countsOf(await third.terminated)).toEqual(expectedCounts(WORDS, 2));
    expect(
      [...world.inputEnded.entries()].filter(([, mode]) => mode === StopMode.NO_DRAIN),
    ).toHaveLength(5);
  }, 120_000);

  it("refuses to restore a vertex at another max parallelism, naming it, before anything is deployed", async () => {
    const first = await run(wordCount(2));
    await progress(first, 1_000);
    const location = await first.stopWithSavepoint();
    await first.terminated;
    await expect(
      run(wordCount(2, 256), { savepointRestore: { path: location } }),
    ).rejects.toMatchObject({
      code: ErrorCodes.STATE_ASSIGNMENT,
      message: expect.stringMatching(
        /cannot restore Count from checkpoint \d+ .* it was taken with max parallelism 128, and the job's Count has max parallelism 256/,
      ),
    });
  }, 60_000);

  it("refuses a savepoint holding state of a vertex the job lacks, unless allowNonRestoredState skips it", async () => {
    const first = await run(wordCount(2));
    await progress(first, 1_000);
    const location = await first.stopWithSavepoint();
    await first.terminated;
    const renamed = new JobGraph("renamed counter");
    const sources = renamed.addVertex({ name: "Source", parallelism: 2, invokable: "source" });
    const counts = renamed.addVertex({ name: "Counter", parallelism: 2, invokable: "count" });
    renamed.connect(sources, counts, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
    });
    await expect(run(renamed, { savepointRestore: { path: location } })).rejects.toMatchObject({
      code: ErrorCodes.STATE_ASSIGNMENT,
      message: expect.stringContaining('state of vertex "Count", which the job does not have'),
    });
    const skipped = await run(renamed, {
      savepointRestore: { path: location, allowNonRestoredState: true },
    });
    expect((await skipped.terminated).status).toBe("FINISHED");
  }, 60_000);

  it("testStopWithSavepointFailingInSnapshotCreation: a stop whose savepoint fails rejects; the stopped sources fail and the job restarts from its latest checkpoint and goes on", async () => {
    const execution = await run(wordCount(2));
    await progress(execution, 2_000);
    world.failSnapshotsFrom = 0n;
    await expect(execution.stopWithSavepoint()).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringMatching(/^savepoint \d+ was aborted/),
    });
    world.failSnapshotsFrom = undefined;
    const result = await execution.terminated;
    expect(countsOf(result)).toEqual(expectedCounts(WORDS, 2));
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    // No savepoint folder of the failed stop is left.
    expect(await readdir(savepoints()).catch(() => [])).toEqual([]);
  }, 90_000);
});
