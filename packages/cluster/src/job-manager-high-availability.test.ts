import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { Configuration, PluginNotFoundError, type Task } from "@sluice/runtime";
import { FencingTokenError } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { JobManager } from "./job-manager.js";
import { TaskManager } from "./task-manager.js";
import { sum } from "./test-support/number-tasks.js";
import {
  closeTestCluster,
  jobManagerConfiguration,
  LOADER,
  startJobManager,
} from "./test-support/test-cluster.js";

afterEach(async () => {
  await closeTestCluster();
});

describe("high-availability.type", () => {
  it("defaults to none: one job manager that leads from the start", async () => {
    const granted: string[] = [];
    const jobManager = await startJobManager({}, { onLeadershipGranted: (t) => granted.push(t) });
    expect(await jobManager.waitForLeadership(5_000)).toBe("0");
    expect(granted).toEqual(["0"]);
  });

  it("names the key when the configured services cannot be loaded", async () => {
    await expectRejection(
      JobManager.start(
        jobManagerConfiguration({ "high-availability.type": "./no-such-ha.js#Factory" }),
        { loader: LOADER },
      ),
      PluginNotFoundError,
      ErrorCodes.PLUGIN_NOT_FOUND,
      "high-availability.type",
    );
  });
});

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the job managers' failover tests: ${reason}`);

describe.skipIf(reason !== undefined)("standby job managers on a real etcd", () => {
  let etcd: EtcdServer | undefined;
  let storageDir = "";
  let cluster = 0;
  const taskManagers: TaskManager[] = [];
  beforeAll(async () => {
    etcd = await startEtcd();
    storageDir = mkdtempSync(path.join(tmpdir(), "sluice-ha-jm-"));
  }, 30_000);
  afterEach(async () => {
    await Promise.all(taskManagers.splice(0).map((tm) => tm.close("the test ended")));
    cluster++;
  });
  afterAll(async () => {
    await etcd?.stop();
    rmSync(storageDir, { recursive: true, force: true });
  });
  const ha = () => ({
    "high-availability.type": "etcd",
    "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
    "high-availability.storageDir": storageDir,
    "high-availability.cluster-id": `jm-${process.pid}-${cluster}`,
    "high-availability.etcd.lease-ttl": "2s",
  });
  const startTaskManager = async (jobManager?: JobManager) => {
    const taskManager = await TaskManager.start(
      // Only the HA keys: it finds the job manager through leader retrieval.
      new Configuration(ha()),
      {
        loader: LOADER,
        connectRetryMs: 15_000,
        ...(jobManager === undefined ? {} : { jobManager }),
      },
    );
    taskManagers.push(taskManager);
    return taskManager;
  };

  /** A task manager that finds the leader through retrieval and follows it, its warnings kept. */
  const startFollowingTaskManager = async (
    warnings: string[],
    configuration: Record<string, string> = ha(),
  ) => {
    const taskManager = await TaskManager.start(new Configuration(configuration), {
      loader: LOADER,
      connectRetryMs: 20_000,
      onWarning: (message) => warnings.push(message),
    });
    taskManagers.push(taskManager);
    return taskManager;
  };

  it("registers task managers with the leader, refuses them at a standby, and fails over", async () => {
    const revoked: string[] = [];
    const first = await startJobManager(ha(), { onLeadershipRevoked: () => revoked.push("first") });
    const firstToken = await first.waitForLeadership(15_000);
    const second = await startJobManager(ha());
    expect(second.fencingToken).toBeUndefined();

    const taskManager = await startTaskManager();
    expect(taskManager.jobManagerAddress).toBe(`127.0.0.1:${first.port}`);
    await waitFor(() => first.taskManagers.length === 1, { what: "the registration" });

    // Straight to the standby: refused, with the reason.
    await expectRejection(
      startTaskManager(second),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
      "not the leader",
    );
    expect(second.taskManagers).toHaveLength(0);

    // The leader goes: the standby leads with a newer token, and task managers find it. A
    // planned stop under high availability does not end the task managers: they follow.
    await first.close({ timeoutMs: 1_000 });
    const secondToken = await second.waitForLeadership(15_000);
    expect(BigInt(secondToken)).toBeGreaterThan(BigInt(firstToken));
    const replacement = await startTaskManager();
    expect(replacement.jobManagerAddress).toBe(`127.0.0.1:${second.port}`);
    // The job manager lists a registration before its answer reaches the task manager, which
    // counts it only then: both sides are awaited.
    await waitFor(() => second.taskManagers.length === 2 && taskManager.reRegistrations > 0, {
      what: "the new registrations",
    });
    expect(taskManager.reRegistrations).toBe(1);
    expect(revoked).toEqual([]);
  }, 60_000);

  it("registers a task manager that retrieval sent to the new leader before it confirmed its election, once it did", async () => {
    // Etcd names the leader to retrieval as soon as its address is written; the job manager
    // refuses task managers until it has learned that its write went through.
    const slow = {
      ...ha(),
      "high-availability.type": `${fileURLToPath(new URL("./test-support/slow-confirming-ha.mjs", import.meta.url))}#SlowConfirmingHighAvailabilityServicesFactory`,
    };
    const jobManager = await startJobManager(slow);
    const warnings: string[] = [];
    const taskManager = await startFollowingTaskManager(warnings, slow);
    expect(jobManager.fencingToken).toBeDefined();
    expect(taskManager.jobManagerAddress).toBe(`127.0.0.1:${jobManager.port}`);
    expect(warnings.join("\n")).toMatch(
      /is not the leader \(a standby\).*: registering again in \d+ ms/,
    );
    await waitFor(() => jobManager.taskManagers.length === 1, { what: "the registration" });
  }, 30_000);

  it("re-registers a task manager with the standby after kill -9 of the leader", async () => {
    const leader = spawnJobManager(ha());
    await leader.waitFor(/^leader /);
    const standby = spawnJobManager(ha());
    const standbyPort = Number((await standby.waitFor(/^listening /)).split(" ")[1]);
    const warnings: string[] = [];
    const taskManager = await startFollowingTaskManager(warnings);
    await leader.waitFor(new RegExp(`^registered ${process.pid}`));
    const killedAt = Date.now();
    leader.child.kill("SIGKILL");
    await standby.waitFor(/^leader /, 20_000);
    await standby.waitFor(new RegExp(`^registered ${process.pid}`), 30_000);
    // The job manager logs the registration before its reply reaches the task manager.
    await waitFor(() => taskManager.reRegistrations === 1, { what: "the registration's reply" });
    console.log(
      `the task manager registered with the new leader ${Date.now() - killedAt} ms after kill -9 of the old one (lease TTL 2 s)`,
    );
    expect(taskManager.jobManagerAddress).toBe(`127.0.0.1:${standbyPort}`);
    expect(warnings.join("\n")).toContain(
      "registering again with the leader that high availability names",
    );
    // It still runs: its TaskExecutor was kept, not closed.
    let ended = false;
    void taskManager.terminated.then(() => {
      ended = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(ended).toBe(false);
  }, 90_000);

  it("starts a task manager after kill -9 of the leader, whose address etcd still shows: it registers with the next leader", async () => {
    const leader = spawnJobManager(ha());
    await leader.waitFor(/^leader /);
    const standby = spawnJobManager(ha());
    const standbyPort = Number((await standby.waitFor(/^listening /)).split(" ")[1]);
    leader.child.kill("SIGKILL");
    // Until the killed leader's lease expires (2 s), leader retrieval still finds its address.
    const warnings: string[] = [];
    const taskManager = await startFollowingTaskManager(warnings);
    expect(taskManager.jobManagerAddress).toBe(`127.0.0.1:${standbyPort}`);
    await standby.waitFor(new RegExp(`^registered ${process.pid}`), 30_000);
    expect(warnings.join("\n")).toContain(
      "cannot be reached (refused or reset): asking leader retrieval again",
    );
  }, 90_000);

  it("takes a running job over on the standby from the latest stored checkpoint after kill -9 of the leader, exactly once", async () => {
    const checkpoints = mkdtempSync(path.join(tmpdir(), "sluice-ha-checkpoints-"));
    try {
      const keys = {
        ...ha(),
        "state.checkpoints.dir": checkpoints,
        "state.checkpoints.num-retained": "3",
        "execution.checkpointing.interval": "50ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": "1",
      };
      const leader = spawnJobManager(keys, "numbers");
      await leader.waitFor(/^leader /);
      const standby = spawnJobManager(keys, "numbers");
      await standby.waitFor(/^listening /);
      const own = await Promise.all(
        [0, 1].map(() =>
          TaskManager.start(new Configuration(ha()), {
            loader: LOADER,
            connectRetryMs: 20_000,
            invokables: { numbers: slowNumbers, sum },
            onWarning: () => {},
          }),
        ),
      );
      taskManagers.push(...own);
      const jobId = (await leader.waitFor(/^deployed /)).split(" ")[1] as string;
      // Once the leader stored a completed checkpoint of the job in etcd, it dies.
      const reader = await new EtcdHighAvailabilityServicesFactory().createHAServices(
        new Configuration(ha()),
        {},
      );
      try {
        const store = reader.createCompletedCheckpointStore(jobId, 3);
        await waitFor(async () => (await store.getLatestCheckpoint()) !== undefined, {
          what: "a checkpoint of the job in the completed-checkpoint store",
          timeoutMs: 20_000,
        });
      } finally {
        await reader.close();
      }
      const killedAt = Date.now();
      leader.child.kill("SIGKILL");
      await standby.waitFor(/^leader /, 30_000);
      const electedMs = Date.now() - killedAt;
      const deployed = await standby.waitFor(/^deployed /, 30_000);
      const [, recoveredId, restoredFrom] = deployed.split(" ");
      console.log(
        `kill -9 of the leader: standby elected after ${electedMs} ms, job redeployed from checkpoint ${restoredFrom} after ${Date.now() - killedAt} ms (lease TTL 2 s)`,
      );
      expect(recoveredId).toBe(jobId);
      expect(restoredFrom).not.toBe("-");
      // The library took the job over at the election; the application's submit found it.
      expect(await standby.waitFor(/^recovered /)).toBe(`recovered ${jobId}`);
      const finished = JSON.parse(
        (await standby.waitFor(/^finished /, 60_000)).slice("finished ".length),
      ) as {
        status: string;
        error: string | null;
        sums: { count: number; sum: number }[];
        restoredFrom: string | null;
      };
      expect(finished.status, String(finished.error)).toBe("FINISHED");
      // It went on from the stored checkpoint, not from the start.
      expect(finished.restoredFrom).toBe(restoredFrom);
      // Exactly once across the failover: every number counted once.
      expect(finished.sums.reduce((t, s) => t + s.count, 0)).toBe(2 * SLOW_NUMBERS);
      expect(finished.sums.reduce((t, s) => t + s.sum, 0)).toBe(SLOW_NUMBERS * (SLOW_NUMBERS - 1));
      for (const tm of own) expect(tm.reRegistrations).toBe(1);
    } finally {
      rmSync(checkpoints, { recursive: true, force: true });
    }
  }, 120_000);
});

const CANDIDATE = fileURLToPath(
  new URL("./test-support/job-manager-candidate.mjs", import.meta.url),
);
const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  children.clear();
});

const SLOW_NUMBERS = 30_000;

/** Numbers 0..SLOW_NUMBERS-1 with a millisecond's pause every 100, so a failover hits mid-job. */
async function slowNumbers(task: Task): Promise<number> {
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<number>();
  while (offset < SLOW_NUMBERS) {
    if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
    else if (offset % 100 === 0) {
      await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    writer.emit(offset);
    offset++;
  }
  return offset;
}

/** A job manager in its own process (the built packages), to be killed with SIGKILL. */
function spawnJobManager(keys: Readonly<Record<string, string>>, mode = "idle") {
  const child = spawn(
    process.execPath,
    [
      CANDIDATE,
      JSON.stringify({
        ...jobManagerConfiguration().toObject(),
        ...keys,
      }),
      mode,
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  children.add(child);
  const lines: string[] = [];
  let partial = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  return {
    child,
    async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<string> {
      await waitFor(() => lines.some((line) => pattern.test(line)), {
        what: `${pattern} from job manager ${child.pid} (printed: ${lines.join(" | ")})`,
        timeoutMs,
      });
      return lines.find((line) => pattern.test(line)) as string;
    },
  };
}
