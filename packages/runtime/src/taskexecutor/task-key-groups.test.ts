import type { JsonValue } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { JobGraph } from "../jobmaster/job-graph.js";
import { computeKeyGroupRangeForOperatorIndex } from "../partitioner/key-group-range-assignment.js";
import { LocalCluster } from "./test-support/local-cluster.js";

const cluster = new LocalCluster();
afterEach(() => cluster.close());

describe("a task's key groups", () => {
  it("are its subtask's share of its vertex's max parallelism, as the HASH partitioner routes them", async () => {
    const keyGroupsOf = (task: {
      maxParallelism: number;
      keyGroupRange: { startKeyGroup: number; endKeyGroup: number };
    }): JsonValue => ({
      maxParallelism: task.maxParallelism,
      start: task.keyGroupRange.startKeyGroup,
      end: task.keyGroupRange.endKeyGroup,
    });
    const executor = await cluster.startExecutor(undefined, {
      invokables: { keyGroups: keyGroupsOf },
    });
    const deployer = await cluster.startDeployer();
    const graph = new JobGraph("key groups");
    graph.addVertex({
      name: "Explicit",
      parallelism: 3,
      maxParallelism: 10,
      invokable: "keyGroups",
    });
    graph.addVertex({ name: "Default", parallelism: 2, invokable: "keyGroups" });
    const result = await (await deployer.deploy(graph, () => executor)).terminated;
    expect(result.status).toBe("FINISHED");
    const expected = (maxParallelism: number, parallelism: number) =>
      Array.from({ length: parallelism }, (_, i) => {
        const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, i);
        return { maxParallelism, start: range.startKeyGroup, end: range.endKeyGroup };
      });
    expect(result.results.get("Explicit")).toEqual(expected(10, 3));
    // Flink's default max parallelism: at least 128.
    expect(result.results.get("Default")).toEqual(expected(128, 2));
  });
});
