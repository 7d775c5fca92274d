import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { JobGraph, TaskDeploymentError } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

/** A job module: numbers 0..n-1 into a sum. */
const JOB_MODULE = `
export default {
  userCode: {
    invokables: {
      numbers: async (task) => {
        const writer = task.writer();
        for (let i = 0; i < task.configuration.records; i++) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(i);
        }
      },
      sum: async (task) => {
        let sum = 0;
        for await (const value of task.reader()) sum += value;
        return { sum };
      },
    },
  },
  createJobGraph() {},
};
`;

const folders: string[] = [];
afterEach(async () => {
  await closeTestCluster();
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function folder(withModule: boolean): string {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
  folders.push(dir);
  if (withModule) writeFileSync(path.join(dir, "numbers.mjs"), JOB_MODULE);
  return dir;
}

function numbersGraph(): JobGraph {
  const graph = new JobGraph("numbers");
  graph.setUserCodeModule("./numbers.mjs");
  const numbers = graph.addVertex({
    name: "Numbers",
    parallelism: 2,
    invokable: "numbers",
    configuration: { records: 10_000 },
  });
  const sum = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum" });
  graph.connect(numbers, sum, { partitioner: { name: "REBALANCE" }, serializer: "int32" });
  return graph;
}

describe("a job manager deploying a job that names its job module", () => {
  it("runs it on task managers that load the module from their own folders", async () => {
    const jobManager = await startJobManager();
    for (let i = 0; i < 2; i++) {
      await startTaskManager(jobManager, {}, { userCodeLoader: { cwd: folder(true) } });
    }
    await jobManager.waitForTaskManagers(2);
    const result = await (await jobManager.deploy(numbersGraph())).terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Sum")).toEqual([{ sum: 2 * ((9_999 * 10_000) / 2) }]);
  });

  it("refuses it before any task starts, naming the task manager that cannot load the module", async () => {
    const jobManager = await startJobManager();
    await startTaskManager(jobManager, {}, { userCodeLoader: { cwd: folder(true) } });
    const empty = folder(false);
    const without = await startTaskManager(jobManager, {}, { userCodeLoader: { cwd: empty } });
    const [, second] = await jobManager.waitForTaskManagers(2);
    const error = await expectRejection(
      jobManager.deploy(numbersGraph()),
      TaskDeploymentError,
      ErrorCodes.TASK_DEPLOYMENT,
    );
    expect(error.message).toContain("job module ./numbers.mjs");
    expect(error.message).toContain(`${second?.labelWithAddress} cannot load it`);
    expect(error.message).toContain(path.join(empty, "numbers.mjs"));
    // Nothing ran: the task manager that lacks the module has no task.
    expect(without.executor.runningTasks).toHaveLength(0);
  });
});
