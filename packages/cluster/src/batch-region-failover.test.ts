/**
 * A batch job across task managers of the control plane, over tcp and ws: when a task manager is lost
 * after the first stage finished, the job fails over by region: only the source that lived there
 * runs again, on a replacement, with the readers of its partition; the other source's files are
 * read as they are.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { must, waitFor } from "@sluice/core/testing";
import { JobGraph, ResultPartitionType, type Task, type TaskInvokable } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const NUMBERS_PER_SOURCE = 20_000;

/** Numbers 0..n-1 from every subtask. */
async function numbers(task: Task): Promise<number> {
  const writer = task.writer<number>();
  for (let i = 0; i < NUMBERS_PER_SOURCE; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.emit(i);
    if (i % 1024 === 1023) await new Promise((resolve) => setImmediate(resolve));
  }
  return NUMBERS_PER_SOURCE;
}

const invokables: Readonly<Record<string, TaskInvokable<Task>>> = { numbers, sum };

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sluice-batch-failover-"));
});
afterEach(async () => {
  await closeTestCluster();
  await rm(dir, { recursive: true, force: true });
});

describe("a batch job on the cluster", () => {
  it.each(["tcp", "ws"])(
    "re-runs only the source of the lost task manager and the readers of its partition, when it is lost between the stages (%s)",
    async (shuffle) => {
      const jobManager = await startJobManager({
        "shuffle-service-factory.class": shuffle,
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 5,
        "restart-strategy.fixed-delay.delay": "10ms",
      });
      const worker = {
        "io.tmp.dirs": dir,
        "taskmanager.network.sort-shuffle.min-buffers": 8,
        "taskmanager.memory.framework.off-heap.batch-shuffle.size": "512kb",
      };
      const taskManagers = await Promise.all(
        [0, 1].map(() => startTaskManager(jobManager, worker, { invokables })),
      );
      const graph = new JobGraph("batch numbers");
      const source = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
      const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
      graph.connect(source, total, {
        partitioner: { name: "HASH", keySelector: "value" },
        serializer: "int32",
        partitionType: ResultPartitionType.BLOCKING,
      });
      const execution = await jobManager.deploy(graph);
      await waitFor(
        () =>
          execution.executionVertices
            .filter((vertex) => vertex.vertex === source)
            .every((vertex) => vertex.state === "FINISHED"),
        { what: "both sources to finish", timeoutMs: 20_000 },
      );
      await must(taskManagers.find((tm) => tm.index === 1)).close("lost between the stages");
      await startTaskManager(jobManager, worker, { invokables });

      const result = await execution.terminated;
      expect(result.status, String(result.error)).toBe("FINISHED");
      expect(result.restarts).toBeGreaterThanOrEqual(1);
      // Numbers (1/2) lived on task manager 0: its partition was read as it was.
      expect(result.rerunTasks).toEqual(["Numbers (2/2)", "Sum (1/2)", "Sum (2/2)"]);
      const sums = (result.results.get("Sum") ?? []) as { count: number; sum: number }[];
      expect(sums.reduce((all, s) => all + s.count, 0)).toBe(2 * NUMBERS_PER_SOURCE);
      expect(sums.reduce((all, s) => all + s.sum, 0)).toBe(
        NUMBERS_PER_SOURCE * (NUMBERS_PER_SOURCE - 1),
      );
    },
  );
});
