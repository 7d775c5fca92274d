/**
 * A checkpointed job across task managers of the control plane: checkpoints are triggered,
 * acknowledged and completed over it, and when a task manager leaves mid-job the job restarts
 * from its latest completed checkpoint onto a task manager that registers to replace it.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { must, waitFor } from "@sluice/core/testing";
import type { Task, TaskInvokable } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import { numbersJob, sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const NUMBERS_PER_SOURCE = 40_000;

let checkpointsDir: string;
beforeEach(async () => {
  checkpointsDir = await mkdtemp(path.join(tmpdir(), "sluice-cluster-failover-"));
});
afterEach(async () => {
  await closeTestCluster();
  await rm(checkpointsDir, { recursive: true, force: true });
});

/**
 * Numbers 0..n-1 from every source subtask, a millisecond's pause every 200 (so the job runs
 * long enough to lose a task manager mid-way); its state is its offset.
 */
async function numbers(task: Task): Promise<number> {
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<number>();
  while (offset < NUMBERS_PER_SOURCE) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    else if (offset % 200 === 0) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    writer.emit(offset);
    offset++;
  }
  return offset;
}

const invokables: Readonly<Record<string, TaskInvokable<Task>>> = { numbers, sum };

function checkpointing(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    "state.checkpoints.dir": checkpointsDir,
    "execution.checkpointing.interval": "50ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 1,
    "restart-strategy.fixed-delay.delay": "10ms",
    ...extra,
  };
}

describe("a checkpointed job on the cluster", () => {
  it("restarts from its latest completed checkpoint onto a replacement when a task manager leaves mid-job", async () => {
    let latestAtLoss: bigint | undefined;
    let execution: Awaited<ReturnType<typeof jobManager.deploy>> | undefined;
    const jobManager = await startJobManager(checkpointing(), {
      onTaskManagerLost: () => {
        latestAtLoss = execution?.checkpointCoordinator?.latestCompletedCheckpoint?.checkpointId;
      },
    });
    const taskManagers = await Promise.all(
      [0, 1].map(() => startTaskManager(jobManager, {}, { invokables })),
    );
    execution = await jobManager.deploy(numbersJob("checkpointed numbers"));
    const coordinator = must(execution.checkpointCoordinator);
    await waitFor(() => coordinator.numberOfCompletedCheckpoints >= 1, {
      what: "a checkpoint acknowledged by every task over the control plane",
      timeoutMs: 10_000,
    });
    const leaving = must(taskManagers.find((tm) => tm.index === 1));
    const lost = must(jobManager.taskManagers.find((tm) => tm.index === 1));
    await leaving.close("leaving mid-job");
    const replacement = await startTaskManager(jobManager, {}, { invokables });

    const result = await execution.terminated;
    expect(result.status, String(result.error)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(latestAtLoss).toBeGreaterThanOrEqual(1n);
    expect(result.checkpoints.restoredFrom).toBe(latestAtLoss);
    // Exactly once: every number counted once, however much was replayed after the restart.
    const sums = (result.results.get("Sum") ?? []) as { count: number; sum: number }[];
    expect(sums.reduce((total, s) => total + s.count, 0)).toBe(2 * NUMBERS_PER_SOURCE);
    expect(sums.reduce((total, s) => total + s.sum, 0)).toBe(
      NUMBERS_PER_SOURCE * (NUMBERS_PER_SOURCE - 1),
    );
    const gateways = new Set(execution.executionVertices.map((vertex) => vertex.gateway));
    expect(gateways.has(lost)).toBe(false);
    expect([...gateways].map((gateway) => (gateway as RegisteredTaskManager).index).sort()).toEqual(
      [0, replacement.index].sort(),
    );
  });

  it("says what the restart waits for, counts each wait that times out as an attempt, and fails naming slot.request.timeout once the strategy gives up", async () => {
    const waits: string[] = [];
    const jobManager = await startJobManager(
      checkpointing({
        "slot.request.timeout": "200ms",
        "restart-strategy.fixed-delay.attempts": 2,
      }),
      { onTaskManagerWait: (wait, phase) => waits.push(`${phase}: ${wait.what}`) },
    );
    const taskManagers = await Promise.all(
      [0, 1].map(() => startTaskManager(jobManager, {}, { invokables })),
    );
    const execution = await jobManager.deploy(numbersJob("checkpointed numbers"));
    await waitFor(() => execution.executionVertices.every((v) => v.state === "RUNNING"), {
      what: "every task to run",
    });
    const leaving = must(jobManager.taskManagers[1]);
    await must(taskManagers.find((tm) => tm.index === 1)).close("leaving for good");
    const lost = `the lost ${leaving.labelWithAddress}, which ran Numbers (2/2)`;
    await waitFor(() => jobManager.taskManagerWaits.length === 1, { what: "the restart's wait" });
    expect(jobManager.taskManagerWaits[0]).toMatchObject({
      what: `a task manager to replace ${lost}`,
      timeoutMs: 200,
    });
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error).toMatchObject({ code: ErrorCodes.TIMEOUT });
    expect(result.error?.message).toBe(
      `no task manager registered within 200 ms (slot.request.timeout) to replace ${lost}`,
    );
    // The loss was the first failure, each wait that timed out one more: with 2 attempts the
    // second timeout fails the job.
    expect(waits).toEqual([
      `began: a task manager to replace ${lost}`,
      `timed-out: a task manager to replace ${lost}`,
      `began: a task manager to replace ${lost}`,
      `timed-out: a task manager to replace ${lost}`,
    ]);
    expect(jobManager.taskManagerWaits).toEqual([]);
  });
});
