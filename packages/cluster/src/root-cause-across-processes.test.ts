/**
 * A job whose producer runs in the job manager's process and whose consumer runs in a task
 * manager process of its own (the set-up of docs/embedding.md): the job's error is the first
 * real failure, the consumer's, with its code, message, task and task manager; the cancellations
 * it caused elsewhere are not reported as the cause.
 */
import { type ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes, Int32Serializer, Int64Serializer, type TypeSerializer } from "@sluice/core";
import { must } from "@sluice/core/testing";
import { JobGraph, type Task, TaskExecutor } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import type { JobManager } from "./job-manager.js";
import { closeTestCluster, LOADER, startJobManager } from "./test-support/test-cluster.js";

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
// It runs the compiled packages, which vitest's global set-up builds.
const CHILD = path.join(PACKAGE_DIR, "src/test-support/consumer-task-manager.mjs");
const RECORDS = 200_000;

const children = new Set<ChildProcess>();
const executors: TaskExecutor[] = [];
afterEach(async () => {
  await closeTestCluster();
  for (const executor of executors.splice(0)) await executor.close();
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  children.clear();
});

/** The consumer's task manager, in a process of its own; what it prints to stderr shows here. */
function startConsumerProcess(jobManager: JobManager, failAt: number, point: string): void {
  const child = spawn(
    process.execPath,
    [CHILD, jobManager.host, String(jobManager.port), String(failAt), point],
    { cwd: PACKAGE_DIR, stdio: ["ignore", "ignore", "inherit"] },
  );
  children.add(child);
}

async function produce(task: Task): Promise<number> {
  const writer = task.writer<number>();
  for (let i = 0; i < RECORDS; i++) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    if (task.signal.aborted) break;
    writer.emit(i);
  }
  return RECORDS;
}

async function runJob(
  failAt: number,
  childPoint: string,
  overrides: Readonly<Record<string, unknown>> = {},
) {
  const jobManager = await startJobManager(overrides);
  const executor = await TaskExecutor.start(jobManager.configuration, {
    loader: LOADER,
    invokables: { produce },
    serializers: { point: Int32Serializer.INSTANCE },
  });
  executors.push(executor);
  startConsumerProcess(jobManager, failAt, childPoint);
  const [consumer] = await jobManager.waitForTaskManagers(1, 60_000);
  const graph = new JobGraph("numbers");
  const source = graph.addVertex({ name: "Produce", parallelism: 1, invokable: "produce" });
  const sink = graph.addVertex({ name: "Consume", parallelism: 1, invokable: "consume" });
  graph.connect(source, sink, { partitioner: { name: "FORWARD" }, serializer: "point" });
  const execution = await jobManager.deploy(graph, (v) =>
    v === source ? executor : must(consumer),
  );
  const result = await execution.terminated;
  return { result, consumer: must(consumer) };
}

describe("the root cause of a job across processes", () => {
  it("is the remote consumer's own error, not the producer's cancellation", async () => {
    const { result, consumer } = await runJob(1_000, "int32");
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Consume (1/1)#0");
    expect(result.failedTaskLocation?.resourceId.toString()).toBe(
      consumer.location.resourceId.toString(),
    );
    expect(result.error).toMatchObject({
      code: ErrorCodes.UNKNOWN,
      message: "the consumer rejects record 1000 (1000)",
    });
    // The consumer's own stack, from its process: the invokable's frame in the child's script.
    expect(result.error?.stack).toContain("consumer-task-manager.mjs");
  }, 120_000);

  it("names both serializers when the consumer's process resolves the edge's serializer to another", async () => {
    // A restart would resolve the same serializers again: the job fails without one.
    const { result, consumer } = await runJob(-1, "int64", {
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 3,
      "restart-strategy.fixed-delay.delay": "10ms",
    });
    expect(result.status).toBe("FAILED");
    expect(result.failedTask).toBe("Consume (1/1)#0");
    expect(result.failedTaskLocation?.resourceId.toString()).toBe(
      consumer.location.resourceId.toString(),
    );
    expect(result.error).toMatchObject({ code: ErrorCodes.SERIALIZATION });
    expect(result.error?.message).toMatch(
      /^serializer mismatch on the edge Produce -> Consume .*serializer "point".*: Produce \(1\/1\)#0 on TaskExecutor \w+ .* writes with int32, Consume \(1\/1\)#0 on TaskExecutor \w+ .* reads with int64;/,
    );
    expect(result.error?.message).toContain(consumer.location.resourceId.toString());
    expect(result.restarts).toBe(0);
  }, 120_000);
});

describe("the serializer check between two TaskExecutors of one process", () => {
  it.each(["producers-first", "consumers-first"] as const)(
    "fails the consumer (%s) naming both serializers, before a record is decoded",
    async (order) => {
      const jobManager = await startJobManager();
      const start = (point: TypeSerializer<unknown>) =>
        TaskExecutor.start(jobManager.configuration, {
          loader: LOADER,
          invokables: {
            produce,
            consume: () => {
              throw new Error("the consumer must not run");
            },
          },
          serializers: { point },
        });
      const writes = await start(Int32Serializer.INSTANCE as TypeSerializer<unknown>);
      executors.push(writes);
      const reads = await start(Int64Serializer.INSTANCE as TypeSerializer<unknown>);
      executors.push(reads);
      const graph = new JobGraph("mismatch");
      const source = graph.addVertex({ name: "Produce", parallelism: 1, invokable: "produce" });
      const sink = graph.addVertex({ name: "Consume", parallelism: 1, invokable: "consume" });
      graph.connect(source, sink, { partitioner: { name: "FORWARD" }, serializer: "point" });
      const execution = await jobManager.deploy(graph, (v) => (v === sink ? reads : writes), {
        order,
      });
      const result = await execution.terminated;
      expect(result.status).toBe("FAILED");
      expect(result.failedTask).toBe("Consume (1/1)#0");
      expect(result.failedTaskLocation).toBe(reads.location);
      const at = (executor: TaskExecutor) =>
        `TaskExecutor ${executor.resourceId} (${executor.location.host}:${executor.location.dataPort})`;
      expect(result.error).toMatchObject({
        code: ErrorCodes.SERIALIZATION,
        message: `serializer mismatch on the edge Produce -> Consume (data set ${must(graph.edges[0]).resultId}, serializer "point"): Produce (1/1)#0 on ${at(writes)} writes with int32, Consume (1/1)#0 on ${at(reads)} reads with int64; register the same serializer under "point" in every process`,
      });
    },
  );
});
