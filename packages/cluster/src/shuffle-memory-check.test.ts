import { ErrorCodes } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { ConfigurationError, JobGraph, ResultPartitionType } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

afterEach(() => closeTestCluster());

/** Source(p) → HASH → Count(p), the exchange pipelined or blocking. */
function keyed(
  parallelism: number,
  partitionType = ResultPartitionType.PIPELINED_BOUNDED,
): JobGraph {
  const graph = new JobGraph(`keyed p=${parallelism}`);
  const source = graph.addVertex({ name: "Source", parallelism, invokable: "source" });
  const count = graph.addVertex({ name: "Count", parallelism, invokable: "count" });
  graph.connect(source, count, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
    partitionType,
  });
  return graph;
}

const code = { invokables: { source: () => undefined, count: () => undefined } };

describe("the job manager's network-memory check at submission", () => {
  it("refuses a job whose subtasks do not fit a task manager's network memory, naming it, what it needs and has", async () => {
    // 4 MiB of 16 KiB buffers: 256 per task manager.
    const jobManager = await startJobManager();
    await startTaskManager(jobManager, {}, code);
    await startTaskManager(jobManager, {}, code);
    const [first] = await jobManager.waitForTaskManagers(2);
    expect(first?.networkMemory).toBe(4 * 1024 * 1024);
    const error = await expectRejection(
      jobManager.deploy(keyed(32)),
      ConfigurationError,
      ErrorCodes.CONFIG,
    );
    expect(error.message).toMatch(
      /job keyed p=32 \([0-9a-f]{32}\) does not fit the task managers' network memory: the subtasks of Source \(parallelism 32\), Count \(parallelism 32\) run together, and task manager 0 \(pid \d+\) at 127\.0\.0\.1 needs \d+\.\d MiB and has 4\.0 MiB/,
    );
    expect(error.message).toContain("taskmanager.memory.network.min");
    // Nothing was deployed.
    expect(jobManager.jobs).toHaveLength(0);
  });

  it("deploys a job that fits", async () => {
    const jobManager = await startJobManager();
    await startTaskManager(jobManager, {}, code);
    await startTaskManager(jobManager, {}, code);
    await jobManager.waitForTaskManagers(2);
    const small = await jobManager.deploy(keyed(2));
    expect((await small.terminated).status).toBe("FINISHED");
  });
});
