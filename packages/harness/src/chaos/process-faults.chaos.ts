/**
 * Chaos on the task manager processes (`pnpm test:chaos`): a pause (SIGSTOP for 15 s, then
 * SIGCONT) and kill -9 at every new completed checkpoint with a replacement started, across
 * network namespaces. Results: one `{"chaos":...}` JSON line per scenario (docs/chaos.md).
 */
import { describe, expect, it } from "vitest";
import type { TrackedProcess } from "../testing/tracked-process.js";
import {
  checkpointAfter,
  expectVerified,
  jobEnd,
  pauseFor,
  printResult,
  resultOf,
  startChaosCluster,
} from "./chaos-cluster.js";
import { useChaosSuite } from "./chaos-suite.js";

const suite = useChaosSuite("slc-chaos-proc", "10.80.0");

const RECORDS = 2_000_000;
/** Kills of the watchdog: one at each of this many new completed checkpoints. */
const KILLS = 3;

describe("chaos on the task manager processes", () => {
  it("SIGSTOP of a task manager for 15 s, then SIGCONT: the job carries on, verified", async (context) => {
    if (suite.skipIfUnavailable(context)) return;
    const network = suite.network();
    const cluster = suite.track(
      await startChaosCluster(network, RECORDS, { job: ["--duration", "30"] }),
    );
    const before = await checkpointAfter(cluster, 0, 60_000, "a first checkpoint");
    const resumedAt = await pauseFor(cluster.tms[1] as TrackedProcess, 15_000);
    await checkpointAfter(cluster, before, 120_000, "a checkpoint after SIGCONT");
    const recoverMs = Date.now() - resumedAt;
    const summary = await expectVerified(cluster, await jobEnd(cluster, 180_000), RECORDS);
    // 15 s is well inside heartbeat.timeout (50 s): the job manager waits, nothing restarts.
    expect(summary.restarts).toBe(0);
    printResult(resultOf("SIGSTOP 15 s", summary, { recoverMs }));
  }, 300_000);

  it(`kill -9 of a task manager at each of ${KILLS} new completed checkpoints, a replacement started each time: verified`, async (context) => {
    if (suite.skipIfUnavailable(context)) return;
    const network = suite.network();
    // Long enough that the job still runs after the last kill: each kill costs a restart.
    const cluster = suite.track(
      await startChaosCluster(network, RECORDS, { job: ["--duration", "20"] }),
    );
    const recoverMs: number[] = [];
    let latest = await checkpointAfter(cluster, 0, 60_000, "a first checkpoint");
    for (let kill = 0; kill < KILLS; kill++) {
      // The watchdog: at a new completed checkpoint, kill -9 a live task manager (the two
      // hosts take turns) and start its replacement on the same host.
      const live = cluster.tms.filter(
        (tm) => tm.output().code === null && tm.output().signal === null,
      );
      const victim = live[kill % live.length] as TrackedProcess;
      victim.child.kill("SIGKILL");
      const killedAt = Date.now();
      cluster.startTaskManager(cluster.hostOf(victim));
      latest = await checkpointAfter(
        cluster,
        latest,
        120_000,
        `a checkpoint after kill ${kill + 1}`,
      );
      recoverMs.push(Date.now() - killedAt);
    }
    const summary = await expectVerified(cluster, await jobEnd(cluster, 240_000), RECORDS);
    expect(summary.restarts).toBeGreaterThanOrEqual(1);
    expect(summary.restarts).toBeLessThanOrEqual(KILLS);
    printResult(
      resultOf("kill -9 at every new checkpoint", summary, {
        kills: KILLS,
        recoverMs: Math.max(...recoverMs),
        recoverMsEach: recoverMs,
      }),
    );
  }, 400_000);
});
