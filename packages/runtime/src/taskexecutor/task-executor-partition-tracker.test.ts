import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deferred, ErrorCodes } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PollStatus } from "../io/record-reader.js";
import type { JobExecution } from "../jobmaster/job-execution.js";
import { JobGraph } from "../jobmaster/job-graph.js";
import type { Task } from "./task.js";
import type { TaskExecutor } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";
import type { TaskInvokable } from "./user-code-registry.js";

const cluster = new LocalCluster();
let dir: string;
/** The counters wait for this before they read: the test looks at the worker in between. */
let countersMayRead = deferred();

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sluice-te-partition-tracker-"));
  countersMayRead = deferred();
});

afterEach(async () => {
  countersMayRead.resolve();
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
});

async function emit(task: Task): Promise<number> {
  const writer = task.writer<string>();
  for (let i = 0; i < 2_000; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(`w${i % 31}`);
  }
  return 2_000;
}

async function countAfterRelease(task: Task): Promise<number> {
  await countersMayRead.promise;
  const reader = task.reader<string>();
  let count = 0;
  for (;;) {
    const status = reader.pollRecords(() => {
      count++;
    }, 1024);
    if (status === PollStatus.END_OF_INPUT) return count;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

const INVOKABLES: Readonly<Record<string, TaskInvokable<Task>>> = {
  source: emit,
  count: countAfterRelease,
};

/** `Source` (1) → `partitionType` → `Count` (1), both on `executor`. */
async function run(
  executor: TaskExecutor,
  partitionType: ResultPartitionType,
): Promise<JobExecution> {
  const graph = new JobGraph("tracked");
  const source = graph.addVertex({ name: "Source", parallelism: 1, invokable: "source" });
  const count = graph.addVertex({ name: "Count", parallelism: 1, invokable: "count" });
  graph.connect(source, count, {
    partitioner: { name: "FORWARD" },
    serializer: "string",
    partitionType,
  });
  const deployer = await cluster.startDeployer(localConfiguration({ "io.tmp.dirs": dir }));
  return deployer.deploy(graph, () => executor);
}

function vertex(execution: JobExecution, name: string) {
  const found = execution.executionVertices.find((v) => v.name.startsWith(name));
  if (found === undefined) throw new Error(`no ${name}`);
  return found;
}

function files(): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name));
}

describe("TaskExecutorPartitionTracker", () => {
  it("tracks a BLOCKING partition past the end of its producer until the job side releases it", async () => {
    const executor = await cluster.startExecutor(localConfiguration({ "io.tmp.dirs": dir }), {
      invokables: INVOKABLES,
    });
    const execution = await run(executor, ResultPartitionType.BLOCKING);
    const source = vertex(execution, "Source");
    await expect.poll(() => source.state, { timeout: 20_000 }).toBe("FINISHED");
    await expect.poll(() => vertex(execution, "Count").state, { timeout: 20_000 }).toBe("RUNNING");
    // The producer is gone; its partition stays, on disk, tracked for the job.
    const tracked = executor.partitionTracker.getTrackedPartitionsFor(execution.jobId);
    expect(tracked).toHaveLength(1);
    expect(tracked[0]?.partitionType.name).toBe("BLOCKING");
    expect(tracked[0]?.partitionId.producerId.equals(source.attemptId)).toBe(true);
    expect(executor.runningTasks.map((task) => task.name)).not.toContain(source.name);
    expect(files().length).toBeGreaterThan(0);
    countersMayRead.resolve();
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Count")).toEqual([2_000]);
    // The job side released it at the job's end: no longer tracked, its files deleted.
    expect(executor.partitionTracker.isTrackingPartitionsFor(execution.jobId)).toBe(false);
    await expect.poll(files).toEqual([]);
  });

  it("does not track a PIPELINED partition, which its consumer releases", async () => {
    const executor = await cluster.startExecutor(localConfiguration({ "io.tmp.dirs": dir }), {
      invokables: INVOKABLES,
    });
    const execution = await run(executor, ResultPartitionType.PIPELINED_BOUNDED);
    await expect.poll(() => vertex(execution, "Count").state, { timeout: 20_000 }).toBe("RUNNING");
    expect(executor.partitionTracker.isTrackingPartitionsFor(execution.jobId)).toBe(false);
    countersMayRead.resolve();
    expect((await execution.terminated).status).toBe("FINISHED");
  });

  it("releases every partition of a released job, BLOCKING_PERSISTENT too, under its reader", async () => {
    const executor = await cluster.startExecutor(localConfiguration({ "io.tmp.dirs": dir }), {
      invokables: INVOKABLES,
    });
    const execution = await run(executor, ResultPartitionType.BLOCKING_PERSISTENT);
    const source = vertex(execution, "Source");
    await expect.poll(() => source.state, { timeout: 20_000 }).toBe("FINISHED");
    await expect.poll(() => vertex(execution, "Count").state, { timeout: 20_000 }).toBe("RUNNING");
    const dataFiles = files();
    expect(dataFiles.length).toBeGreaterThan(0);
    const released = await executor.releaseJobPartitions(execution.jobId);
    expect(released.map((id) => id.producerId.toString())).toEqual([source.attemptId.toString()]);
    expect(executor.partitionTracker.isTrackingPartitionsFor(execution.jobId)).toBe(false);
    await expect.poll(() => dataFiles.filter((file) => existsSync(file))).toEqual([]);
    countersMayRead.resolve();
    // The reader's view was released under it, as Flink cancels a task whose consumed
    // partition was released.
    expect((await execution.terminated).status).not.toBe("FINISHED");
    const cause = vertex(execution, "Count").failureCause;
    expect(cause).toMatchObject({ code: ErrorCodes.CANCELLED });
    expect(cause?.message).toMatch(/released/);
  });
});
