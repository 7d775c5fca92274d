/**
 * Flink's `test_ha_datastream.sh` on a user's job, not the demo: the embedding guide's
 * high-availability example (a keyed word count into a `TransactionalFileSink`, configured as the
 * guide shows), installed outside the repository from a registry (the run's test registry), runs on two job managers
 * and two task managers with a real etcd, over TCP and over WebSocket. While the job runs, the
 * leader is killed three times (a new standby started each time, one kill at a time, each once
 * the leader stored a checkpoint of its own) and a task manager is killed at every new stored
 * checkpoint until then (a new one started each time). Over TCP the leader is then paused past
 * its lease (SIGSTOP) and resumed: it may delete and change nothing the checkpoint store names;
 * and finally it is stopped as planned (SIGTERM): the next leader resumes from the checkpoint etcd
 * names then. Over WebSocket etcd is instead SIGKILLed and restarted 4 s later (twice the lease)
 * and then the leader's election key is deleted: each time the cluster ends with one leader that
 * runs the job. At the end the committed part files hold every word's count exactly once, no
 * in-progress or pending file is left, and every takeover was logged.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { EtcdHighAvailabilityServicesFactory } from "@sluice/ha-etcd";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "@sluice/ha-etcd/testing";
import { Configuration } from "@sluice/runtime";
import type { CompletedCheckpointStore, HighAvailabilityServices } from "@sluice/runtime-api";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type GuideApplication,
  installGuideApplication,
} from "./test-support/guide-application.js";
import { codeBlocks } from "./test-support/markdown-code-blocks.js";

const reason = etcdUnavailableReason();
if (reason !== undefined) console.warn(`skipping the guide's high-availability example: ${reason}`);

/** The example's fixed job id and its number of numbers, read from the guide's code. */
const jobCode =
  codeBlocks("docs/embedding.md").find((block) => block.file === "ha-job.ts")?.code ?? "";
const JOB_ID = /export const JOB_ID = "([0-9a-f]{32})"/.exec(jobCode)?.[1] as string;
const NUMBERS = Number(/export const NUMBERS = ([\d_]+);/.exec(jobCode)?.[1]?.replaceAll("_", ""));
const WORDS = 1000;

let guide: GuideApplication | undefined;
let etcd: EtcdServer | undefined;
beforeAll(async () => {
  if (reason !== undefined) return;
  etcd = await startEtcd();
  guide = installGuideApplication("sluice-ha-guide-");
}, 240_000);
afterAll(async () => {
  await etcd?.stop();
  guide?.remove();
});

/** One process of the example, its output split into lines. */
interface Proc {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly lines: string[];
  readonly exited: Promise<number | null>;
  exitCode: number | null | undefined;
}

const running = new Set<Proc>();
afterEach(() => {
  for (const proc of running) {
    if (proc.exitCode === undefined) {
      proc.child.kill("SIGCONT");
      proc.child.kill("SIGKILL");
    }
  }
});

function start(script: string, cwd: string, args: readonly string[]): Proc {
  const child = spawn(
    process.execPath,
    [path.join(guide?.app as string, "dist", script), ...args],
    {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  const lines: string[] = [];
  let partial = "";
  const collect = (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const proc: Proc = {
    child,
    pid: child.pid as number,
    lines,
    exitCode: undefined,
    exited: new Promise((resolve) => {
      child.on("close", (code, signal) => {
        // An exit by a signal has no code: the signal goes into the output the assertions print.
        if (signal !== null) lines.push(`[test] exited by ${signal}`);
        proc.exitCode = code;
        running.delete(proc);
        resolve(code);
      });
    }),
  };
  running.add(proc);
  return proc;
}

/** Polls `condition` every 25 ms until it holds; fails after `timeoutMs` naming `what`. */
async function until(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 60_000,
  more: () => string = () => "",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}\n${more()}`);
    await sleep(25);
  }
}

/** One call of etcd's JSON gateway (keys and values in base64). */
async function gateway(path_: string, body: object): Promise<Record<string, unknown>> {
  const response = await fetch(`${(etcd as EtcdServer).endpoint}${path_}`, {
    method: "POST",
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

/** Deletes the key of the leader of `clusterId`'s election (its oldest candidate key). */
async function deleteLeaderKey(clusterId: string): Promise<string> {
  const b64 = (text: string) => Buffer.from(text).toString("base64");
  const prefix = `/sluice/${clusterId}/election/job-manager/`;
  const end = `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`;
  const range = await gateway("/v3/kv/range", {
    key: b64(prefix),
    range_end: b64(end),
    sort_target: "CREATE",
    sort_order: "ASCEND",
  });
  const [leader] = (range.kvs ?? []) as { key: string }[];
  if (leader === undefined) throw new Error(`no candidate key under ${prefix}`);
  await gateway("/v3/kv/deleterange", { key: leader.key });
  return Buffer.from(leader.key, "base64").toString();
}

/** The committed counts of the sink's folder, and the hidden files left there. */
function committed(out: string): { counts: Map<string, number>; hidden: string[] } {
  const counts = new Map<string, number>();
  const entries = readdirSync(out);
  for (const name of entries.filter((entry) => !entry.startsWith("."))) {
    for (const line of readFileSync(path.join(out, name), "utf8").split("\n")) {
      if (line === "") continue;
      const [word, n] = line.split("\t") as [string, string];
      counts.set(word, (counts.get(word) ?? 0) + Number(n));
    }
  }
  return { counts, hidden: entries.filter((entry) => entry.startsWith(".")) };
}

describe.skipIf(reason !== undefined)("the embedding guide's high-availability example", () => {
  it.each([
    ["tcp", true],
    ["ws", false],
  ])(
    "keeps exactly once over %s through three leader kills with a task-manager kill at every new checkpoint, then (TCP) a leader paused past its lease and a planned stop, or (WebSocket) etcd restarted and the leader's election key deleted",
    async (plugin, pauseAndStop) => {
      const etcdFaults = !pauseAndStop;
      expect(guide?.typeCheck?.status, guide?.typeCheck?.output ?? guide?.install.output).toBe(0);
      const app = guide?.app as string;
      const cwd = path.join(app, `run-${plugin}`);
      mkdirSync(cwd);
      copyFileSync(path.join(app, "ha.yaml"), path.join(cwd, "ha.yaml"));
      const clusterId = `guide-${plugin}-${process.pid}`;
      const keys = {
        "shuffle-service-factory.class": plugin,
        "high-availability.etcd.endpoints": (etcd as EtcdServer).endpoint,
        // Absolute, so that this test's own reader of the stores finds the records.
        "high-availability.storageDir": path.join(cwd, "ha"),
        "high-availability.cluster-id": clusterId,
        // A standby leads about 2 s after the leader died; a paused leader is noticed as soon.
        "high-availability.etcd.lease-ttl": "2s",
        "heartbeat.interval": "500ms",
        "heartbeat.timeout": "3s",
        // Every checkpoint stays in the store during the test: none is subsumed under our eyes.
        "state.checkpoints.num-retained": 1000,
      };
      const args = Object.entries(keys).flatMap(([key, value]) => ["-D", `${key}=${value}`]);
      // Numbers per second per source: the job must outlive the faults, and the test waits for
      // its end. Each restart rewinds to a checkpoint: when the last fault is done, at most a
      // fifth of the numbers are through (measured on two loaded cores), and the rest takes
      // about 10 s.
      const perSecond = pauseAndStop ? "3000" : "4000";
      const jobManagers: Proc[] = [];
      const taskManagers: Proc[] = [];
      const startJobManager = () => {
        const jm = start("ha-job-manager.js", cwd, [...args, perSecond]);
        jobManagers.push(jm);
        return jm;
      };
      const startTaskManager = () => {
        const tm = start("ha-task-manager.js", cwd, args);
        taskManagers.push(tm);
        return tm;
      };
      const output = () =>
        [...jobManagers, ...taskManagers].map((p) => p.lines.slice(-15).join("\n")).join("\n---\n");
      const said = (proc: Proc, pattern: RegExp) => proc.lines.some((line) => pattern.test(line));
      const alive = (proc: Proc) => proc.exitCode === undefined;

      // The test's own view of the stores (it never leads).
      const reader: HighAvailabilityServices =
        await new EtcdHighAvailabilityServicesFactory().createHAServices(
          new Configuration({ ...keys, "high-availability.type": "etcd" }),
          {},
        );
      const store: CompletedCheckpointStore = reader.createCompletedCheckpointStore(JOB_ID, 1000);
      // 0 while etcd is down (restarted on purpose).
      const latestStored = async () =>
        (await store.getLatestCheckpoint().catch(() => undefined))?.checkpointId ?? 0n;
      try {
        const first = startJobManager();
        await until(
          "the first job manager leads",
          () => said(first, /leads \(fencing token/),
          30_000,
          output,
        );
        startJobManager();
        startTaskManager();
        startTaskManager();

        /** The job manager that runs the job now, and the checkpoint it restored (0: none). */
        let leader: Proc = first;
        const restoredBy = new Map<Proc, bigint>([[first, 0n]]);
        const takeovers = (jm: Proc) => jm.lines.filter((l) => /took job \S+ over/.test(l));
        /** Waits for a job manager to log a takeover it had not logged before. */
        const runsOn = async (what: string) => {
          const before = new Map(jobManagers.map((jm) => [jm, takeovers(jm).length] as const));
          await until(
            what,
            () => {
              const found = jobManagers.find(
                (jm) => alive(jm) && takeovers(jm).length > (before.get(jm) ?? 0),
              );
              if (found === undefined) return false;
              const line = takeovers(found).at(-1) as string;
              restoredBy.set(found, BigInt(/checkpoint (\d+)/.exec(line)?.[1] ?? "0"));
              leader = found;
              return true;
            },
            60_000,
            output,
          );
        };
        const storedOwnCheckpoint = (what: string) =>
          until(
            what,
            async () =>
              said(leader, /job \S+ runs on this leader/) &&
              (await latestStored()) > (restoredBy.get(leader) ?? 0n),
            60_000,
            output,
          );
        await until(
          "the job runs",
          () => said(first, /job \S+ runs on this leader/),
          60_000,
          output,
        );

        // The task-manager watchdog: a kill at every new stored checkpoint, until the last leader kill.
        let watching = true;
        let taskManagerKills = 0;
        const watchdog = (async () => {
          let seen = await latestStored();
          while (watching) {
            const latest = await latestStored();
            if (latest > seen) {
              seen = latest;
              const victim = taskManagers.filter(alive)[taskManagerKills % 2];
              if (victim !== undefined) {
                victim.child.kill("SIGKILL");
                taskManagerKills++;
                startTaskManager();
              }
            }
            await sleep(20);
          }
        })();

        for (let kill = 1; kill <= 3; kill++) {
          await storedOwnCheckpoint(
            `leader ${leader.pid} stored a checkpoint of its own (kill ${kill})`,
          );
          const killed = leader;
          const takeover = runsOn(
            `a new leader took the job over after kill ${kill} of ${killed.pid}`,
          );
          killed.child.kill("SIGKILL");
          startJobManager();
          await takeover;
        }
        watching = false;
        await watchdog;
        expect(taskManagerKills).toBeGreaterThanOrEqual(1);

        if (pauseAndStop) {
          // A leader paused past its lease: a new one takes over; the paused one, resumed, must
          // not delete or change any checkpoint the store names.
          await storedOwnCheckpoint("the leader stored a checkpoint of its own (before the pause)");
          const paused = leader;
          const pausedOver = runsOn(`a new leader took the job over from the paused ${paused.pid}`);
          paused.child.kill("SIGSTOP");
          await pausedOver;
          startJobManager();
          const before = new Map(
            (await store.getAllCheckpoints()).map(
              (c) => [c.externalPointer, statSync(c.externalPointer).mtimeMs] as const,
            ),
          );
          paused.child.kill("SIGCONT");
          await until(
            `the resumed ${paused.pid} knows it lost its leadership`,
            () => said(paused, /lost its leadership/),
            30_000,
            output,
          );
          // Time for whatever its timers and sockets still do once it runs again.
          await sleep(2_000);
          for (const [file, mtime] of before) {
            expect(existsSync(file), `${file}, named in etcd, was deleted`).toBe(true);
            expect(statSync(file).mtimeMs, `${file}, named in etcd, was changed`).toBe(mtime);
          }
          for (const checkpoint of await store.getAllCheckpoints()) {
            expect(existsSync(checkpoint.externalPointer), checkpoint.externalPointer).toBe(true);
          }

          // A planned stop: the job is suspended, its checkpoints kept; the next leader resumes
          // from the one etcd names.
          await storedOwnCheckpoint("the leader stored a checkpoint of its own (before the stop)");
          const stopped = leader;
          const stoppedOver = runsOn(
            `a new leader took the job over after the planned stop of ${stopped.pid}`,
          );
          stopped.child.kill("SIGTERM");
          let exitedAt = 0;
          stopped.child.once("exit", () => {
            exitedAt = Date.now();
          });
          expect(await stopped.exited, stopped.lines.join("\n")).toBe(0);
          await stoppedOver;
          // The checkpoint etcd named when the stopped leader left: the newest it stored (the
          // new leader's are triggered only once it runs the job, after that).
          const named = (await store.getAllCheckpoints()).filter((c) => c.timestamp <= exitedAt);
          expect(restoredBy.get(leader)).toBe(named.at(-1)?.checkpointId);
        }

        if (etcdFaults) {
          // etcd SIGKILLed and restarted after twice the lease: the leader's lease expires
          // meanwhile; once etcd is back, one job manager (the same or another) runs the job.
          await storedOwnCheckpoint(
            "the leader stored a checkpoint of its own (before etcd's restart)",
          );
          // A task manager keeps its process while etcd is away and registers with the leader
          // once there is one again: no task manager is lost or started meanwhile.
          const taskManagersBefore = taskManagers.length;
          const aliveBefore = taskManagers.filter(alive).length;
          const afterRestart = runsOn("a leader took the job over after etcd's restart");
          const killedAt = Date.now();
          await (etcd as EtcdServer).kill();
          await sleep(killedAt + 4_000 - Date.now());
          await (etcd as EtcdServer).restart();
          await afterRestart;
          expect(taskManagers.length).toBe(taskManagersBefore);
          expect(taskManagers.filter(alive).length, output()).toBe(aliveBefore);
          // The leader's election key deleted: it steps down, and one job manager takes over.
          await storedOwnCheckpoint(
            "the leader stored a checkpoint of its own (before its key goes)",
          );
          const afterDeletion = runsOn("a leader took the job over after its key was deleted");
          await deleteLeaderKey(clusterId);
          await afterDeletion;
        }

        // The job ends on the last leader, which shuts the task managers down and exits 0.
        const last = leader;
        expect(await last.exited, output()).toBe(0);
        expect(said(last, /job FINISHED after \d+ restart\(s\) here/)).toBe(true);
        const logged = jobManagers.reduce((n, jm) => n + takeovers(jm).length, 0);
        expect(logged).toBeGreaterThanOrEqual(5);
        const { counts, hidden } = committed(path.join(cwd, "out"));
        expect(hidden).toEqual([]);
        expect(counts.size).toBe(WORDS);
        for (const [word, n] of counts) expect(n, word).toBe(NUMBERS / WORDS);
        // Its result is stored clean, and nothing else of it is left in etcd.
        expect(await reader.getJobResultStore().hasCleanJobResultEntry(JOB_ID)).toBe(true);
        expect(await reader.getJobGraphStore().getJobIds()).toEqual([]);
        expect(await store.getAllCheckpoints()).toEqual([]);
        await Promise.all(taskManagers.filter(alive).map((tm) => tm.exited));
      } finally {
        await reader.close();
      }
    },
    240_000,
  );
});
