/**
 * Standby job managers of the demo on a real etcd: two `jobmanager` roles and two `taskmanager`
 * roles (which find the leader through etcd), the leader SIGKILLed once it stored a completed
 * checkpoint of the running word count; the standby is elected, the task managers register with
 * it, it recovers the job from that checkpoint and prints `verified` (exactly once).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { lastJsonLine, startDemo, useDemoProcesses } from "./test-support/demo-process.js";

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the demo's job-manager failover: ${reason}`);

useDemoProcesses();

describe.skipIf(reason !== undefined)("the demo's standby job managers", () => {
  let etcd: EtcdServer | undefined;
  let folder = "";
  beforeAll(async () => {
    etcd = await startEtcd();
    folder = mkdtempSync(path.join(tmpdir(), "sluice-demo-ha-"));
  }, 30_000);
  afterAll(async () => {
    await etcd?.stop();
    rmSync(folder, { recursive: true, force: true });
  });

  it("recovers the running job on the standby after kill -9 of the leader and verifies it", async () => {
    const keys = {
      "high-availability.type": "etcd",
      "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
      "high-availability.storageDir": path.join(folder, "ha"),
      "high-availability.cluster-id": "/demo",
      "high-availability.etcd.lease-ttl": "2s",
    };
    const ha = Object.entries(keys).flatMap(([key, value]) => ["-D", `${key}=${value}`]);
    const job = [
      "--task-managers",
      "2",
      "--records",
      "400k",
      "--throttle",
      "40k",
      "--checkpoint-interval",
      "200",
      "--checkpointing",
      "exactly-once",
      "--json",
      "-D",
      `state.checkpoints.dir=${path.join(folder, "checkpoints")}`,
      "-D",
      "state.checkpoints.num-retained=3",
      "-D",
      "rest.port=0",
      ...ha,
    ];
    const leader = startDemo(["jobmanager", "--bind", "127.0.0.1:0", ...job]);
    await waitFor(() => leader.output().stderr.includes("elected leader"), {
      what: "the first job manager's election",
      timeoutMs: 30_000,
    });
    const standby = startDemo(["jobmanager", "--bind", "127.0.0.1:0", ...job]);
    await waitFor(() => standby.output().stderr.includes("standby job manager"), {
      what: "the standby",
      timeoutMs: 30_000,
    });
    for (let i = 0; i < 2; i++) startDemo(["taskmanager", ...ha]);

    // Once the leader stored a completed checkpoint of the job, it is killed.
    const reader = await new EtcdHighAvailabilityServicesFactory().createHAServices(
      readableConfigOf(keys),
      {},
    );
    try {
      await waitFor(
        async () => {
          const [jobId] = await reader.getJobGraphStore().getJobIds();
          if (jobId === undefined) return false;
          const store = reader.createCompletedCheckpointStore(jobId, 3);
          return (await store.getLatestCheckpoint()) !== undefined;
        },
        { what: "a stored checkpoint of the running job", timeoutMs: 60_000, intervalMs: 50 },
      );
    } finally {
      await reader.close();
    }
    leader.child.kill("SIGKILL");

    const run = await standby.done;
    // With --json the human-readable lines go to stderr, the summary to stdout.
    expect(run.stderr).toMatch(
      /recovering job [0-9a-f]+ left by the previous leader, from checkpoint \d+/,
    );
    expect(run.stderr).toContain("verified: the counts of all 400,000 words equal the reference");
    const summary = lastJsonLine(run.stdout) as {
      verified: boolean;
      checkpoints: { restoredFrom: number | null };
    };
    expect(summary.verified).toBe(true);
    expect(summary.checkpoints.restoredFrom).not.toBeNull();
    expect(run.code, run.stderr).toBe(0);
  }, 180_000);
});
