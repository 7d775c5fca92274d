/**
 * A keyed typed job on task manager processes (they load the job's module), stopped with a
 * savepoint at parallelism 2 and resumed from it at 3, stopped again and resumed at 1, over TCP
 * and over WebSocket, and with the task managers' slots on worker threads (both, or slot 0 on
 * the main thread and slot 1 on a worker thread): every key's running counts are collected
 * exactly once across the three runs. Its keyed state moves by key group and its collected
 * records (an operator list state) each to one new subtask; the source keeps its parallelism.
 */
import path from "node:path";
import type { JobManager } from "@sluice/cluster";
import { waitFor } from "@sluice/core/testing";
import { FsCheckpointStorage, type JobExecution } from "@sluice/runtime";
import { describe, expect, it } from "vitest";
import { counts, environment, KEYS, RECORDS } from "./test-support/rescalable-keyed-job.mjs";
import {
  expectedRunningCounts,
  type SlotsMode,
  useTaskManagerProcesses,
} from "./test-support/task-manager-processes.js";

/** The shuffle plugin, and how the task managers run their slots. */
const CASES: readonly (readonly [string, SlotsMode])[] = [
  ["tcp", "single-loop"],
  ["ws", "single-loop"],
  ["tcp", "threaded"],
  ["tcp", "threaded-main-slot"],
];
const cluster = useTaskManagerProcesses("sluice-datastream-rescale-");

/** Deploys the job with its keyed part at `parallelism`, from `savepoint` when given. */
async function deployAt(
  jobManager: JobManager,
  parallelism: number,
  savepoint?: string,
): Promise<JobExecution> {
  environment.setParallelism(parallelism);
  const graph = environment.createJobGraph();
  return jobManager.deploy(
    graph,
    undefined,
    savepoint === undefined ? {} : { savepointRestore: { path: savepoint } },
  );
}

/** Stops `execution` with a savepoint once a few checkpoints completed; returns its folder. */
async function stopMidway(execution: JobExecution): Promise<string> {
  await waitFor(() => (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 4, {
    what: "four completed checkpoints",
    timeoutMs: 60_000,
  });
  const savepoint = await execution.stopWithSavepoint();
  const result = await execution.terminated;
  expect(result.status, String(result.error?.stack)).toBe("FINISHED");
  // Stopped mid-way: some records counted, not all.
  const collected = counts.results(result).length;
  expect(collected).toBeGreaterThan(0);
  expect(collected).toBeLessThan(RECORDS);
  return savepoint;
}

describe.each(CASES)("the keyed typed job over %s, slots %s", (plugin, slotsMode) => {
  it("stopped with a savepoint at parallelism 2, resumed at 3 and then at 1 on task manager processes, collects every key's running counts exactly once", async () => {
    const jobManager = await cluster.startJobManager(plugin, "5s");
    for (let i = 0; i < 2; i++) {
      cluster.startTaskManagerProcess(jobManager, "rescalable-keyed-job.mjs", slotsMode);
    }
    await jobManager.waitForTaskManagers(2, 60_000);
    // Every task runs in a task manager process: none in this one.
    expect(jobManager.taskManagers.every((tm) => tm.pid !== process.pid)).toBe(true);
    const slots = slotsMode === "single-loop" ? 1 : 2;
    expect(jobManager.taskManagers.map((tm) => tm.numberOfSlots)).toEqual([slots, slots]);

    const atTwo = await stopMidway(await deployAt(jobManager, 2));
    const second = await deployAt(jobManager, 3, atTwo);
    const keyed = second.executionVertices.filter((v) => v.vertex.name.includes("Collect"));
    expect(keyed).toHaveLength(3);
    const atThree = await stopMidway(second);
    const metadata = await FsCheckpointStorage.readMetadata(path.join(atThree, "_metadata"));
    expect(metadata.snapshotType).toBe("SAVEPOINT_SUSPEND");

    const third = await deployAt(jobManager, 1, atThree);
    const result = await third.terminated;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.checkpoints.restoredFrom).toBe(BigInt(metadata.checkpointId as string));
    const got = counts.results(result).map(([key, count]) => `${key}:${count}`);
    expect(got.length).toBe(RECORDS);
    expect(got.sort()).toEqual(expectedRunningCounts(KEYS, RECORDS).sort());
  }, 180_000);
});
