/**
 * Flink's task cancellation watchdog in a task manager process: a canceled task whose code
 * ignores `task.signal` fails its TaskExecutor fatally after `task.cancellation.timeout`; the
 * task manager ends (`fatal-error`) and its process exits through its handler, while the job
 * ends CANCELED instead of waiting for the task for ever.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@sluice/core/testing";
import { JobGraph } from "@sluice/runtime";
import { afterEach, expect, it } from "vitest";
import { closeTestCluster, startJobManager } from "./test-support/test-cluster.js";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// It runs the compiled packages, which vitest's global set-up builds.
const CHILD = path.join(PACKAGE_DIR, "src/test-support/stuck-task-manager.mjs");
const TIMEOUT_MS = 500;
/** What the job side, the process's end and a loaded machine may add to the timeout. */
const BOUND_MS = 10_000;

const children = new Set<ChildProcess>();
afterEach(async () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  children.clear();
  await closeTestCluster();
});

it("exits the task manager process through its fatal-error handler when a canceled task ignores task.signal, and the job ends CANCELED", async () => {
  const jobManager = await startJobManager({ "task.cancellation.timeout": `${TIMEOUT_MS}ms` });
  const child = spawn(process.execPath, [CHILD, jobManager.host, String(jobManager.port)], {
    cwd: PACKAGE_DIR,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  await jobManager.waitForTaskManagers(1, 60_000);
  const graph = new JobGraph("stuck");
  graph.addVertex({ name: "Stuck", parallelism: 1, invokable: "stuck" });
  const execution = await jobManager.deploy(graph);
  await waitFor(() => stdout.includes("running"), { timeoutMs: 30_000, what: "the task to run" });

  const canceledAt = Date.now();
  execution.cancel("the test cancels the job");
  const code = await exited;
  const exitedAfterMs = Date.now() - canceledAt;
  expect(code, stderr).toBe(70);
  expect(exitedAfterMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
  expect(exitedAfterMs).toBeLessThan(TIMEOUT_MS + BOUND_MS);
  const [vertex] = execution.executionVertices;
  const fatal = `Stuck (1/1)#0 (${vertex?.attemptId}) did not end within ${TIMEOUT_MS} ms (task.cancellation.timeout) of being canceled: its code ignores task.signal`;
  expect(stderr).toContain(`fatal: ${fatal}\n`);
  expect(stderr).toContain(`ended: fatal-error: the TaskExecutor failed fatally: ${fatal}\n`);
  const result = await execution.terminated;
  expect(result.status).toBe("CANCELED");
}, 60_000);
