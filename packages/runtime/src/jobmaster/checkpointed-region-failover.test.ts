/**
 * Region failover of jobs that take checkpoints (Flink's RestartPipelinedRegionFailoverStrategy
 * with `restoreLatestCheckpointedStateToSubtasks`): a failure restarts only the pipelined regions
 * it touches, restored from the latest completed checkpoint, while the other regions run on.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { must, waitFor } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointFailureReason } from "../messages/checkpoint-failure-reason.js";
import {
  addKeyedWordCount,
  keyedWordCountInvokables,
  keyedWordCountWorld,
} from "../taskexecutor/test-support/keyed-word-count.js";
import {
  checkpointingConfiguration,
  LocalCluster,
} from "../taskexecutor/test-support/local-cluster.js";
import { expectedCounts } from "../taskexecutor/test-support/word-count.js";
import type { JobExecution } from "./job-execution.js";
import { JobGraph } from "./job-graph.js";
import type { JobResult } from "./job-result.js";

const cluster = new LocalCluster();
let checkpoints: string;
let world = keyedWordCountWorld();
beforeEach(async () => {
  checkpoints = await mkdtemp(path.join(tmpdir(), "sluice-region-checkpoints-"));
  world = keyedWordCountWorld();
});
afterEach(async () => {
  await cluster.close();
  await rm(checkpoints, { recursive: true, force: true });
});

const WORDS = 20_000;

/** The counts the subtasks of `vertex` returned, summed per word; a word counted twice fails. */
function countsOf(result: JobResult, vertex: string): Map<string, number> {
  const total = new Map<string, number>();
  for (const partial of result.results.get(vertex) ?? []) {
    for (const [word, n] of Object.entries((partial ?? {}) as Record<string, number>)) {
      expect(total.has(word), `${word} counted by two subtasks of ${vertex}`).toBe(false);
      total.set(word, n);
    }
  }
  return total;
}

async function run(graph: JobGraph): Promise<JobExecution> {
  const config = checkpointingConfiguration(checkpoints, 3);
  const executor = await cluster.startExecutor(config, {
    invokables: keyedWordCountInvokables(world),
  });
  const deployer = await cluster.startDeployer(config);
  return deployer.deploy(graph, () => executor);
}

describe("region failover of a job with checkpoints", () => {
  it("restarts only the pipeline of a failed task, restored from the latest checkpoint: the other pipeline's tasks keep their attempts and never restart, and both count exactly once", async () => {
    const graph = new JobGraph("two pipelines");
    addKeyedWordCount(graph, 2, { prefix: "A ", words: WORDS });
    addKeyedWordCount(graph, 2, { prefix: "B ", words: WORDS });
    let execution: JobExecution | undefined;
    let latestAtFailure: bigint | undefined;
    world.failCounter = (task, counted) => {
      const completed = execution?.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
      const fail =
        task.taskName === "A Count" &&
        task.subtaskIndex === 0 &&
        task.attemptNumber === 0 &&
        counted >= 2_000 &&
        completed >= 2;
      if (fail) {
        latestAtFailure = execution?.checkpointCoordinator?.latestCompletedCheckpoint?.checkpointId;
      }
      return fail;
    };
    execution = await run(graph);
    const attemptsOfB = execution.executionVertices
      .filter((e) => e.vertex.name.startsWith("B "))
      .map((e) => e.attemptId.toString());
    const result = await execution.terminated;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect([...result.rerunTasks].sort()).toEqual(
      ["A Count (1/2)", "A Count (2/2)", "A Source (1/2)", "A Source (2/2)"].sort(),
    );
    // Pipeline B ran on: the same attempts from start to end, never restored.
    expect(
      execution.executionVertices
        .filter((e) => e.vertex.name.startsWith("B "))
        .map((e) => e.attemptId.toString()),
    ).toEqual(attemptsOfB);
    expect([...world.restored].filter((name) => name.startsWith("B "))).toEqual([]);
    // Pipeline A restarted from the checkpoint completed last before the failure.
    expect(result.checkpoints.restoredFrom).toBe(must(latestAtFailure));
    expect([...world.restored].sort()).toEqual(
      ["A Count (1/2)#1", "A Count (2/2)#1", "A Source (1/2)#1", "A Source (2/2)#1"].sort(),
    );
    expect(countsOf(result, "A Count")).toEqual(expectedCounts(WORDS, 2));
    expect(countsOf(result, "B Count")).toEqual(expectedCounts(WORDS, 2));
  }, 60_000);

  it("aborts the checkpoints pending at a region failover (JOB_FAILOVER_REGION), and checkpoints of the whole job complete again afterwards", async () => {
    const graph = new JobGraph("two pipelines");
    addKeyedWordCount(graph, 2, { prefix: "A ", words: 40_000 });
    addKeyedWordCount(graph, 2, { prefix: "B ", words: 40_000 });
    let execution: JobExecution | undefined;
    let completedAtFailure = 0;
    world.failCounter = (task, counted) => {
      const coordinator = execution?.checkpointCoordinator;
      const fail =
        task.taskName === "A Count" &&
        task.attemptNumber === 0 &&
        task.subtaskIndex === 1 &&
        counted >= 1_000 &&
        (coordinator?.numberOfPendingCheckpoints ?? 0) > 0 &&
        (coordinator?.numberOfCompletedCheckpoints ?? 0) >= 1;
      if (fail) completedAtFailure = coordinator?.numberOfCompletedCheckpoints ?? 0;
      return fail;
    };
    execution = await run(graph);
    const coordinator = must(execution.checkpointCoordinator);
    await waitFor(
      () =>
        coordinator.lastCheckpointFailure?.reason === CheckpointFailureReason.JOB_FAILOVER_REGION,
      { what: "the pending checkpoint aborted by the region failover", timeoutMs: 30_000 },
    );
    await waitFor(() => coordinator.numberOfCompletedCheckpoints >= completedAtFailure + 2, {
      what: "two checkpoints after the region failover",
      timeoutMs: 30_000,
    });
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(countsOf(result, "A Count")).toEqual(expectedCounts(40_000, 2));
    expect(countsOf(result, "B Count")).toEqual(expectedCounts(40_000, 2));
  }, 60_000);
});
