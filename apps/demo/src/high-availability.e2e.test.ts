/**
 * Flink's HA end-to-end test (test_ha_datastream.sh) on the demo: `--ha etcd --job-managers 2`
 * (the demo starts its own etcd), the leader SIGKILLed three times by `--kill-job-manager-after`
 * (a new standby replaces each one), while a watchdog SIGKILLs a task manager at every new
 * completed checkpoint and starts a new one in its place. The word count writes through the
 * exactly-once file sink; what is checked is the committed part files: every word counted
 * exactly once.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import { etcdUnavailableReason } from "@sluice/ha-etcd/testing";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { readCommittedOutput } from "./sink-options.js";
import {
  type DemoProcess,
  isAlive,
  lastJsonLine,
  type Run,
  startDemo,
  startSluice,
  USRLIB,
  useDemoProcesses,
} from "./test-support/demo-process.js";

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the demo's job-manager failovers: ${reason}`);

useDemoProcesses();

const RECORDS = 300_000;
const LEADER_KILLS = 3;

/** Every process the launcher started, by the pids it printed: none may outlive a test. */
const started = new Set<number>();
afterEach(() => {
  for (const pid of started) if (isAlive(pid)) process.kill(pid, "SIGKILL");
  started.clear();
});

function pidsIn(text: string, pattern: RegExp): number[] {
  return [...text.matchAll(pattern)].map((match) => Number(match[1]));
}

describe.skipIf(reason !== undefined)("the demo's standby job managers (Flink's HA test)", () => {
  it("survives 3 leader kills and a task-manager kill at every new checkpoint, exactly once", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-demo-ha-"));
    const output = path.join(folder, "output");
    // No endpoint: the demo starts its own etcd, which the watchdog reads too.
    const keys = {
      "high-availability.storageDir": path.join(folder, "ha"),
      "high-availability.cluster-id": "/flink-ha-test",
      "high-availability.etcd.lease-ttl": "2s",
    };
    const ha = Object.entries(keys).flatMap(([key, value]) => ["-D", `${key}=${value}`]);
    try {
      const demo = startDemo([
        "--ha",
        "etcd",
        "--job-managers",
        "2",
        "--kill-job-manager-after",
        "1000,2000,3000",
        "--task-managers",
        "2",
        "--records",
        String(RECORDS),
        "--throttle",
        "10k",
        "--checkpoint-interval",
        "200",
        "--checkpointing",
        "exactly-once",
        "--sink",
        "files",
        "--output",
        output,
        "--json",
        "-D",
        `state.checkpoints.dir=${path.join(folder, "checkpoints")}`,
        "-D",
        "state.checkpoints.num-retained=3",
        "-D",
        "rest.port=0",
        ...ha,
      ]);
      const stderr = () => demo.output().stderr;
      const track = () => {
        const text = stderr();
        for (const pid of pidsIn(text, /(?:job|task) manager started: pid (\d+)/g))
          started.add(pid);
        for (const pid of pidsIn(text, /started etcd \(\S+, pid (\d+)\)/g)) started.add(pid);
      };
      await waitFor(() => /started etcd .* at (http:\S+)/.test(stderr()), {
        what: "the demo's own etcd",
        timeoutMs: 30_000,
      });
      track();
      const endpoint = /started etcd .* at (http:\S+)/.exec(stderr())?.[1] as string;
      const watchdog = await taskManagerWatchdog(demo, endpoint, keys, ha, track);

      const run = await endOf(demo, 150_000, watchdog.output);
      const tmKills = await watchdog.stop();
      track();
      // Flink's test: every job-manager kill while task managers die at every checkpoint.
      expect(run.stderr.match(/killed the leader, job manager pid \d+/g)).toHaveLength(
        LEADER_KILLS,
      );
      expect(tmKills, run.stderr).toBeGreaterThanOrEqual(1);
      const summary = lastJsonLine(run.stdout) as {
        verified: boolean;
        sink?: { committedFiles: number };
        jobManagerFailovers: {
          killedPid: number;
          detectionMs: number | null;
          recoveryMs: number | null;
          restoredFromCheckpoint: number | null;
        }[];
      };
      expect(summary.verified, run.stderr).toBe(true);
      expect(summary.jobManagerFailovers).toHaveLength(LEADER_KILLS);
      for (const failover of summary.jobManagerFailovers) {
        expect(started.has(failover.killedPid)).toBe(true);
        // A standby is elected once the killed leader's lease (2 s) expired.
        expect(failover.detectionMs).toBeGreaterThan(0);
        expect(failover.recoveryMs).toBeGreaterThanOrEqual(failover.detectionMs as number);
        expect(failover.restoredFromCheckpoint).not.toBeNull();
      }
      // The committed output itself: each of the words counted exactly once, nothing left over.
      const committed = await readCommittedOutput(output, 2);
      expect(committed.differences).toEqual([]);
      const total = committed.countsBySubtask
        .flatMap((counts) => [...counts.values()])
        .reduce((sum, count) => sum + count, 0);
      expect(total).toBe(RECORDS);
      expect(summary.sink?.committedFiles).toBe(committed.committedFiles);
      expect(run.code, run.stderr).toBe(0);
      // The demo stopped its etcd and every process it started.
      await waitFor(() => [...started].every((pid) => !isAlive(pid)), {
        what: "every process the demo started to exit",
        timeoutMs: 15_000,
      });
      console.log(
        `job-manager failovers (detection/recovery ms): ${summary.jobManagerFailovers.map((f) => `${f.detectionMs}/${f.recoveryMs}`).join(", ")}; task managers killed: ${tmKills}`,
      );
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  }, 180_000);
});

/** The demo's end; if it does not end within `ms`, an error with the tail of its output. */
async function endOf(demo: DemoProcess, ms: number, more: () => string): Promise<Run> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new Error(
            `the demo did not end within ${ms} ms:\n${demo.output().stderr.slice(-6000)}\n${more()}`,
          ),
        ),
      ms,
    );
  });
  try {
    return await Promise.race([demo.done, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Flink's task-manager watchdog: at every new completed checkpoint of the job (read from the HA
 * store in etcd) it SIGKILLs one task manager and starts a new one, until the last leader kill.
 * `stop` resolves with how many it killed.
 */
async function taskManagerWatchdog(
  demo: DemoProcess,
  endpoint: string,
  keys: Record<string, string>,
  ha: readonly string[],
  track: () => void,
): Promise<{ stop(): Promise<number>; output(): string }> {
  const services = await new EtcdHighAvailabilityServicesFactory().createHAServices(
    readableConfigOf({
      ...keys,
      "high-availability.type": "etcd",
      "high-availability.etcd.endpoints": endpoint,
    }),
    {},
  );
  const replacements: DemoProcess[] = [];
  const killed = new Set<number>();
  let lastSeen = -1n;
  let stopped = false;
  const loop = (async () => {
    while (!stopped && demo.output().code === null) {
      const done = demo.output().stderr.match(/killed the leader/g)?.length ?? 0;
      if (done >= LEADER_KILLS) break;
      const [jobId] = await services.getJobGraphStore().getJobIds();
      const latest =
        jobId === undefined
          ? undefined
          : await services.createCompletedCheckpointStore(jobId, 1).getLatestCheckpoint();
      if (latest !== undefined && latest.checkpointId > lastSeen) {
        lastSeen = latest.checkpointId;
        track();
        const own = replacements.map((tm) => tm.child.pid as number);
        const launched = pidsIn(demo.output().stderr, /task manager started: pid (\d+)/g);
        const victim = [...launched, ...own].find((pid) => !killed.has(pid) && isAlive(pid));
        if (victim !== undefined) {
          killed.add(victim);
          process.kill(victim, "SIGKILL");
          replacements.push(
            startSluice([
              "taskmanager",
              "--usrlib",
              USRLIB,
              ...ha,
              "-D",
              `high-availability.type=etcd`,
              "-D",
              `high-availability.etcd.endpoints=${endpoint}`,
            ]),
          );
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  // Rethrown by stop(): an etcd error of the watchdog fails the test, not the process.
  loop.catch(() => undefined);
  return {
    output: () =>
      replacements
        .map((tm) => `task manager pid ${tm.child.pid}: ${tm.output().stderr.slice(-2000)}`)
        .join("\n"),
    async stop() {
      stopped = true;
      await loop;
      await services.close();
      // The job's end shut the replacements down; one started late may still be waiting.
      for (const tm of replacements) if (tm.output().code === null) tm.child.kill("SIGKILL");
      await Promise.all(replacements.map((tm) => tm.done));
      return killed.size;
    },
  };
}
