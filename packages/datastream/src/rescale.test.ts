/**
 * A keyed typed job on task manager processes (they load the job's module), stopped with a
 * savepoint at parallelism 2 and resumed from it at 3, stopped again and resumed at 1, over TCP
 * and over WebSocket, and with the task managers' slots on worker threads: every key's running
 * counts are collected exactly once across the three runs. Its keyed state moves by key group and its collected records (an operator list state)
 * each to one new subtask; the source keeps its parallelism.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JobManager } from "@sluice/cluster";
import { waitFor } from "@sluice/core/testing";
import { Configuration, FsCheckpointStorage, type JobExecution } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LOADER, PACKAGE_DIR } from "./test-support/local-execution.js";
import { counts, environment, KEYS, RECORDS } from "./test-support/rescalable-keyed-job.mjs";

const CHILD = path.join(PACKAGE_DIR, "src/test-support/job-task-manager.mjs");
/** The shuffle plugin, and how the task managers run their slots. */
const CASES = [
  ["tcp", "single-loop"],
  ["ws", "single-loop"],
  ["tcp", "threaded"],
] as const;

let base: string;
const children = new Set<ChildProcess>();
const closers: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-datastream-rescale-"));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  await rm(base, { recursive: true, force: true });
});

function configuration(plugin: string): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": plugin,
    "jobmanager.rpc.address": "127.0.0.1",
    "jobmanager.rpc.port": 0,
    "heartbeat.interval": "100ms",
    "heartbeat.timeout": "5s",
    "taskmanager.memory.network.min": "16mb",
    "state.checkpoints.dir": path.join(base, "checkpoints"),
    "state.savepoints.dir": path.join(base, "savepoints"),
    "execution.checkpointing.interval": "50ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 3,
    "restart-strategy.fixed-delay.delay": "10ms",
  });
}

function startTaskManagerProcess(jobManager: JobManager, slotsMode: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [CHILD, jobManager.host, String(jobManager.port), "rescalable-keyed-job.mjs", slotsMode],
    { cwd: PACKAGE_DIR, stdio: ["ignore", "ignore", "inherit"] },
  );
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}

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
    const jobManager = await JobManager.start(configuration(plugin), { loader: LOADER });
    closers.push(() => jobManager.close({ timeoutMs: 5_000 }));
    for (let i = 0; i < 2; i++) startTaskManagerProcess(jobManager, slotsMode);
    await jobManager.waitForTaskManagers(2, 60_000);
    // Every task runs in a task manager process: none in this one.
    expect(jobManager.taskManagers.every((tm) => tm.pid !== process.pid)).toBe(true);
    const slots = slotsMode === "threaded" ? 2 : 1;
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
    const expected: string[] = [];
    for (let key = 0; key < KEYS; key++) {
      const n = Math.floor((RECORDS - 1 - key) / KEYS) + 1;
      for (let count = 1; count <= n; count++) expected.push(`${key}:${count}`);
    }
    expect(got.length).toBe(RECORDS);
    expect(got.sort()).toEqual(expected.sort());
  }, 180_000);
});
