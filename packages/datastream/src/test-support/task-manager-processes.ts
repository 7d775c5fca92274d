/**
 * What the cluster tests of this package share: a checkpoint (and savepoint) folder per test,
 * the cluster's configuration, an in-process job manager, and task manager processes that load
 * a job module of this folder (`job-task-manager.mjs`). Every process, job manager and folder a
 * test started is gone after it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { JobManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { afterEach, beforeEach } from "vitest";
import { LOADER, PACKAGE_DIR } from "./local-execution.js";

const CHILD = path.join(PACKAGE_DIR, "src/test-support/job-task-manager.mjs");

/**
 * How a task manager process runs its slots: on its event loop, two on worker threads, or two
 * with slot 0 on its main thread and slot 1 on a worker thread.
 */
export type SlotsMode = "single-loop" | "threaded" | "threaded-main-slot";

/** The cluster of one test: registers the clean-up hooks of the calling test file. */
export function useTaskManagerProcesses(prefix: string) {
  let base = "";
  const children = new Set<ChildProcess>();
  const closers: (() => Promise<unknown>)[] = [];
  beforeEach(async () => {
    base = await mkdtemp(path.join(tmpdir(), prefix));
  });
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    for (const child of children) child.kill("SIGKILL");
    children.clear();
    await rm(base, { recursive: true, force: true });
  });

  /** Checkpoints every 50 ms into the test's folder, fast heartbeats, a few quick restarts. */
  function configuration(plugin: string, heartbeatTimeout = "3s"): Configuration {
    return new Configuration({
      "shuffle-service-factory.class": plugin,
      "jobmanager.rpc.address": "127.0.0.1",
      "jobmanager.rpc.port": 0,
      "heartbeat.interval": "100ms",
      "heartbeat.timeout": heartbeatTimeout,
      "taskmanager.memory.network.min": "16mb",
      "state.checkpoints.dir": path.join(base, "checkpoints"),
      "state.savepoints.dir": path.join(base, "savepoints"),
      "execution.checkpointing.interval": "50ms",
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 5,
      "restart-strategy.fixed-delay.delay": "10ms",
    });
  }

  return {
    configuration,
    /** A job manager in this process, closed after the test. */
    async startJobManager(plugin: string, heartbeatTimeout?: string): Promise<JobManager> {
      const jobManager = await JobManager.start(configuration(plugin, heartbeatTimeout), {
        loader: LOADER,
      });
      closers.push(() => jobManager.close({ timeoutMs: 5_000 }));
      return jobManager;
    },
    /** Something else to close after the test (before the processes are killed). */
    closeAfterTest(close: () => Promise<unknown>): void {
      closers.push(close);
    },
    /** A task manager process of `jobModule` (a file of this folder), registering with `jobManager`. */
    startTaskManagerProcess(
      jobManager: JobManager,
      jobModule = "keyed-job.mjs",
      slotsMode: SlotsMode = "single-loop",
    ): ChildProcess {
      const child = spawn(
        process.execPath,
        [CHILD, jobManager.host, String(jobManager.port), jobModule, slotsMode],
        { cwd: PACKAGE_DIR, stdio: ["ignore", "ignore", "inherit"] },
      );
      children.add(child);
      child.on("exit", () => children.delete(child));
      return child;
    },
  };
}

/** Every key's running counts 1..n once each, for `records` numbers keyed by `n % keys`. */
export function expectedRunningCounts(keys: number, records: number): string[] {
  const expected: string[] = [];
  for (let key = 0; key < keys; key++) {
    const n = Math.floor((records - 1 - key) / keys) + 1;
    for (let count = 1; count <= n; count++) expected.push(`${key}:${count}`);
  }
  return expected;
}
