/**
 * One job module, three ways to run it, the shuffle plugin chosen by configuration only: in one
 * process (`execute`), on an embedded cluster (a JobManager and TaskManagers in this process),
 * and on a cluster of processes (task managers in child processes that load the module), where
 * a task manager is killed while the job runs and the job restarts from its latest checkpoint.
 * Each run's running counts must be exact.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JobManager, TaskManager } from "@sluice/cluster";
import { Configuration, type JobResult } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import job, { counts, environment, KEYS, RECORDS } from "./test-support/keyed-job.mjs";
import { LOADER, PACKAGE_DIR } from "./test-support/local-execution.js";

const CHILD = path.join(PACKAGE_DIR, "src/test-support/job-task-manager.mjs");
const PLUGINS = ["tcp", "ws"] as const;

let checkpoints: string;
const children = new Set<ChildProcess>();
const closers: (() => Promise<unknown>)[] = [];
beforeEach(async () => {
  checkpoints = await mkdtemp(path.join(tmpdir(), "sluice-datastream-cluster-"));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  await rm(checkpoints, { recursive: true, force: true });
});

function configuration(plugin: string): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": plugin,
    "jobmanager.rpc.address": "127.0.0.1",
    "jobmanager.rpc.port": 0,
    "heartbeat.interval": "100ms",
    "heartbeat.timeout": "3s",
    "taskmanager.memory.network.min": "16mb",
    "state.checkpoints.dir": checkpoints,
    "execution.checkpointing.interval": "50ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 5,
    "restart-strategy.fixed-delay.delay": "10ms",
  });
}

/** Every key's running counts 1..n exactly once, and nothing else. */
function expectExactCounts(result: JobResult): void {
  expect(result.status, String(result.error?.stack)).toBe("FINISHED");
  const got = counts.results(result).map(([key, count]) => `${key}:${count}`);
  const expected: string[] = [];
  for (let key = 0; key < KEYS; key++) {
    const n = Math.floor((RECORDS - 1 - key) / KEYS) + 1;
    for (let count = 1; count <= n; count++) expected.push(`${key}:${count}`);
  }
  expect(got.length).toBe(RECORDS);
  expect(got.sort()).toEqual(expected.sort());
}

async function startJobManager(plugin: string): Promise<JobManager> {
  const jobManager = await JobManager.start(configuration(plugin), { loader: LOADER });
  closers.push(() => jobManager.close({ timeoutMs: 2_000 }));
  return jobManager;
}

function startTaskManagerProcess(jobManager: JobManager): ChildProcess {
  const child = spawn(process.execPath, [CHILD, jobManager.host, String(jobManager.port)], {
    cwd: PACKAGE_DIR,
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(PLUGINS)("the keyed job module over %s", (plugin) => {
  it("counts exactly once in one process", async () => {
    expectExactCounts(await environment.execute(configuration(plugin), { loader: LOADER }));
  }, 60_000);

  it("counts exactly once on an embedded cluster of a job manager and two task managers", async () => {
    const jobManager = await startJobManager(plugin);
    for (let i = 0; i < 2; i++) {
      const taskManager = await TaskManager.start(new Configuration({}), {
        ...job.userCode,
        jobManager: { host: jobManager.host, port: jobManager.port },
        loader: LOADER,
        connectRetryMs: 0,
      });
      closers.push(() => taskManager.close("the test ended"));
    }
    await jobManager.waitForTaskManagers(2, 30_000);
    const graph = await job.createJobGraph({ args: [], configuration: jobManager.configuration });
    const execution = await jobManager.deploy(graph);
    expectExactCounts(await execution.terminated);
  }, 60_000);

  it("counts exactly once on task manager processes that load the module, with one killed after a checkpoint", async () => {
    const jobManager = await startJobManager(plugin);
    const first = startTaskManagerProcess(jobManager);
    startTaskManagerProcess(jobManager);
    await jobManager.waitForTaskManagers(2, 60_000);
    const graph = await job.createJobGraph({ args: [], configuration: jobManager.configuration });
    const execution = await jobManager.deploy(graph);
    const completed = () => execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
    await waitFor(() => completed() >= 2, "two completed checkpoints");
    first.kill("SIGKILL");
    startTaskManagerProcess(jobManager);
    const result = await execution.terminated;
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    expectExactCounts(result);
  }, 90_000);
});
