/**
 * One job module, three ways to run it, the shuffle plugin chosen by configuration only: in one
 * process (`execute`), on an embedded cluster (a JobManager and TaskManagers in this process),
 * and on a cluster of processes (task managers in child processes that load the module), where
 * a task manager is killed while the job runs and the job restarts from its latest checkpoint.
 * Each run's running counts must be exact.
 */
import { TaskManager } from "@sluice/cluster";
import { Configuration, type JobResult } from "@sluice/runtime";
import { describe, expect, it } from "vitest";
import job, { counts, environment, KEYS, RECORDS } from "./test-support/keyed-job.mjs";
import { LOADER } from "./test-support/local-execution.js";
import {
  expectedRunningCounts,
  useTaskManagerProcesses,
} from "./test-support/task-manager-processes.js";

const PLUGINS = ["tcp", "ws"] as const;
const cluster = useTaskManagerProcesses("sluice-datastream-cluster-");

/** Every key's running counts 1..n exactly once, and nothing else. */
function expectExactCounts(result: JobResult): void {
  expect(result.status, String(result.error?.stack)).toBe("FINISHED");
  const got = counts.results(result).map(([key, count]) => `${key}:${count}`);
  expect(got.length).toBe(RECORDS);
  expect(got.sort()).toEqual(expectedRunningCounts(KEYS, RECORDS).sort());
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
    expectExactCounts(await environment.execute(cluster.configuration(plugin), { loader: LOADER }));
  }, 60_000);

  it("counts exactly once on an embedded cluster of a job manager and two task managers", async () => {
    const jobManager = await cluster.startJobManager(plugin);
    for (let i = 0; i < 2; i++) {
      const taskManager = await TaskManager.start(new Configuration({}), {
        ...job.userCode,
        jobManager: { host: jobManager.host, port: jobManager.port },
        loader: LOADER,
        connectRetryMs: 0,
      });
      cluster.closeAfterTest(() => taskManager.close("the test ended"));
    }
    await jobManager.waitForTaskManagers(2, 30_000);
    const graph = await job.createJobGraph({ args: [], configuration: jobManager.configuration });
    const execution = await jobManager.deploy(graph);
    expectExactCounts(await execution.terminated);
  }, 60_000);

  it("counts exactly once on task manager processes that load the module, with one killed after a checkpoint", async () => {
    const jobManager = await cluster.startJobManager(plugin);
    const first = cluster.startTaskManagerProcess(jobManager);
    cluster.startTaskManagerProcess(jobManager);
    await jobManager.waitForTaskManagers(2, 60_000);
    const graph = await job.createJobGraph({ args: [], configuration: jobManager.configuration });
    const execution = await jobManager.deploy(graph);
    const completed = () => execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
    await waitFor(() => completed() >= 2, "two completed checkpoints");
    first.kill("SIGKILL");
    cluster.startTaskManagerProcess(jobManager);
    const result = await execution.terminated;
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    expectExactCounts(result);
  }, 90_000);
});
