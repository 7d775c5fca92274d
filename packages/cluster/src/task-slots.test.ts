import { fileURLToPath } from "node:url";
import { JobGraph } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

afterEach(closeTestCluster);

/** The numbers job's code as a job module (slot threads load code by reference). */
const NUMBERS_CODE = fileURLToPath(new URL("./test-support/numbers-code.mjs", import.meta.url));
const RECORDS = 20_000;

/** Numbers (3) → HASH by value → Sum (3). */
function numbersJob(): JobGraph {
  const graph = new JobGraph("numbers on slots");
  const numbers = graph.addVertex({ name: "Numbers", parallelism: 3, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 3, invokable: "sum" });
  graph.connect(numbers, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

describe("task slots", () => {
  it("are registered by each task manager, the default placement puts as many subtasks of a vertex on it as it has slots, and a task manager with slot threads runs them there", async () => {
    const jobManager = await startJobManager();
    const threaded = await startTaskManager(
      jobManager,
      { "taskmanager.numberOfTaskSlots": 2, "taskmanager.task-slots.mode": "threaded" },
      { userCodeModule: NUMBERS_CODE },
    );
    const single = await startTaskManager(jobManager, {}, { userCodeModule: NUMBERS_CODE });
    const [first, second] = jobManager.taskManagers;
    expect(first?.numberOfSlots).toBe(2);
    expect(second?.numberOfSlots).toBe(1);

    const execution = await jobManager.deploy(numbersJob());
    // Slots of the first task manager first, as Flink fills a task manager's slots.
    for (const name of ["Numbers", "Sum"]) {
      const placed = execution.executionVertices
        .filter((vertex) => vertex.vertex.name === name)
        .sort((a, b) => a.subtaskIndex - b.subtaskIndex)
        .map((vertex) => vertex.gateway);
      expect(placed).toEqual([first, first, second]);
    }
    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    const sums = (result.results.get("Sum") ?? []) as { count: number; sum: number }[];
    expect(sums.reduce((total, s) => total + s.count, 0)).toBe(3 * RECORDS);
    expect(sums.reduce((total, s) => total + s.sum, 0)).toBe((3 * RECORDS * (RECORDS - 1)) / 2);
    // Tasks on slot threads: their metrics are read through the task manager.
    const slotted = first as NonNullable<typeof first>;
    const waiting = new JobGraph("waits");
    waiting.addVertex({ name: "Wait", parallelism: 2, invokable: "waitForCancel" });
    const waits = await jobManager.deploy(waiting, () => slotted);
    await expect
      .poll(
        async () =>
          (await slotted.queryMetrics()).filter(
            (metric) =>
              metric.name === "numRecordsOut" && metric.variables["<task_name>"] === "Wait",
          ).length,
        { timeout: 20_000 },
      )
      .toBe(2);
    waits.cancel("the test saw the metrics");
    expect((await waits.terminated).status).toBe("CANCELED");

    const reports = await jobManager.shutDownTaskManagers({ reason: "the job finished" });
    for (const report of reports.values()) {
      expect(report).toMatchObject({ unreleasedPartitions: 0 });
      const buffers = (report as { networkBuffers: { available: number; total: number } })
        .networkBuffers;
      expect(buffers.available).toBe(buffers.total);
    }
    for (const taskManager of [threaded, single]) {
      expect((await taskManager.terminated).reason).toBe("shutdown");
    }
  }, 60_000);
});
