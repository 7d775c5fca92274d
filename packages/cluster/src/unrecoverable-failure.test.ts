/**
 * A failure no restart can cure fails the job at once, whatever the restart strategy (Flink's
 * non-recoverable errors): a streaming job on a shuffle plugin that stores only BLOCKING
 * partitions (the remote shuffle) is refused with `SLUICE_ERR_CONFIG` instead of restarting for
 * ever, with the default strategy of a checkpointing job and with every configured one.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, isSluiceError } from "@sluice/core";
import type { JobStatus } from "@sluice/runtime";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { numbersJob, sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const checkpoints = mkdtempSync(path.join(tmpdir(), "sluice-unrecoverable-"));
afterEach(async () => {
  await closeTestCluster();
});
afterAll(() => rmSync(checkpoints, { recursive: true, force: true }));

const STRATEGIES: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {
  "the default of a checkpointing job (exponential-delay)": {},
  "fixed-delay, unlimited": {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 2_147_483_647,
    "restart-strategy.fixed-delay.delay": "10ms",
  },
  "failure-rate": {
    "restart-strategy.type": "failure-rate",
    "restart-strategy.failure-rate.max-failures-per-interval": 1_000,
    "restart-strategy.failure-rate.delay": "10ms",
  },
  "exponential-delay": {
    "restart-strategy.type": "exponential-delay",
    "restart-strategy.exponential-delay.initial-backoff": "10ms",
  },
  none: { "restart-strategy.type": "none" },
};

describe("a streaming job on a shuffle that stores BLOCKING partitions only", () => {
  it.each(Object.entries(STRATEGIES))(
    "fails at once with SLUICE_ERR_CONFIG under %s",
    async (_, strategy) => {
      const jobManager = await startJobManager({
        "shuffle-service-factory.class": "@sluice/shuffle-remote#RemoteShuffleServiceFactory",
        "remote-shuffle.manager.rpc-port": 0,
        "execution.checkpointing.interval": "50ms",
        "state.checkpoints.dir": checkpoints,
        ...strategy,
      });
      // The job never gets to run its code: the shuffle refuses its partitions first.
      await startTaskManager(jobManager, {}, { invokables: { numbers: async () => {}, sum } });
      await jobManager.waitForTaskManagers(1, 10_000);
      const statuses: JobStatus[] = [];
      const started = performance.now();
      const execution = await jobManager.deploy(numbersJob("streaming on remote"), undefined, {
        statusListener: (status) => statuses.push(status),
      });
      const result = await execution.terminated;
      const elapsedMs = performance.now() - started;
      expect(result.status).toBe("FAILED");
      expect(isSluiceError(result.error, ErrorCodes.CONFIG)).toBe(true);
      expect(result.error?.message).toContain("stores BLOCKING partitions only");
      expect(result.restarts).toBe(0);
      expect(statuses).not.toContain("RESTARTING");
      expect(elapsedMs).toBeLessThan(1_000);
    },
    30_000,
  );
});
