/**
 * A job that cannot checkpoint (its checkpoint folder cannot be written, as on a full disk) under
 * the default restart strategy of a checkpointing job: it backs off (Flink 1.19's
 * exponential-delay: 1 s, then × 1.5) instead of restarting every second for ever, and every
 * failover is reported with its cause.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { numbersJob, sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const root = mkdtempSync(path.join(tmpdir(), "sluice-backoff-"));
afterEach(async () => {
  await closeTestCluster();
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Numbers for ever, a millisecond apart every 100: the job runs until it is canceled. */
async function endless(task: import("@sluice/runtime").Task): Promise<void> {
  const writer = task.writer<number>();
  for (let i = 0; ; i++) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    else if (i % 100 === 0) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    writer.emit(i);
  }
}

describe("a job whose checkpoints cannot be written, with the default restart strategy", () => {
  it("backs off exponentially and reports every failover with its cause", async () => {
    // A file where the checkpoint folder should be: every checkpoint fails (ENOTDIR).
    const blocked = path.join(root, "not-a-folder");
    writeFileSync(blocked, "");
    const warnings: { at: number; message: string }[] = [];
    const jobManager = await startJobManager(
      {
        "execution.checkpointing.interval": "20ms",
        "state.checkpoints.dir": path.join(blocked, "checkpoints"),
      },
      { onWarning: (message) => warnings.push({ at: performance.now(), message }) },
    );
    await startTaskManager(jobManager, {}, { invokables: { numbers: endless, sum } });
    await jobManager.waitForTaskManagers(1);
    const execution = await jobManager.deploy(numbersJob("blocked checkpoints"));
    const failovers = () => warnings.filter((w) => w.message.includes("fails over"));
    await waitFor(() => failovers().length >= 3, { what: "three failovers", timeoutMs: 30_000 });
    execution.cancel("the test ended");
    const [first, second, third] = failovers() as [
      (typeof warnings)[number],
      (typeof warnings)[number],
      (typeof warnings)[number],
    ];
    for (const { message } of [first, second, third]) {
      expect(message).toMatch(/ENOTDIR/);
      expect(message).toContain("blocked checkpoints");
    }
    // 1 s ± 10 %, then 1.5 s ± 10 %, plus the time to fail the next checkpoint.
    expect(second.at - first.at).toBeGreaterThanOrEqual(900);
    expect(third.at - second.at).toBeGreaterThanOrEqual(1_350);
    expect(third.at - second.at).toBeGreaterThan(second.at - first.at);
    const result = await execution.terminated;
    expect(result.status).toBe("CANCELED");
    expect(result.restarts).toBeGreaterThanOrEqual(3);
  }, 60_000);
});
