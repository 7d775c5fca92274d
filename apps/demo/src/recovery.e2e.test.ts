/**
 * The demo survives a killed task manager: checkpoints every 200 ms, one task manager SIGKILLed
 * mid-job, a replacement started, and every task restarted from the latest completed checkpoint.
 * In exactly-once mode the counts must still equal the reference exactly — which they do only if
 * the barriers were aligned: a counter that snapshots records from after the barrier on one
 * channel counts them twice once the sources replay from their offsets.
 */
import { describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  type Run,
  startDemo,
  TWO_RESTARTS,
  until,
  useDemoProcesses,
} from "./test-support/demo-process.js";

useDemoProcesses();

interface RecoverySummary {
  verified: boolean;
  differences?: string[];
  records: number;
  checkpointingMode: string;
  checkpoints: {
    completed: number;
    aborted: number;
    restoredFrom: number | null;
    restoredChannelStateBytes?: number;
  };
  restarts: number;
  killedTaskManager?: { index: number; pid: number; afterMs: number; latestCheckpoint?: number };
  processes: { role: string; pid: number; lost?: boolean }[];
}

/** The run's JSON summary, once it is checked to have no differences and the run exited 0. */
function verifiedSummary(run: Run): RecoverySummary {
  const summary = lastJsonLine(run.stdout) as unknown as RecoverySummary;
  expect(summary.differences ?? [], run.stderr).toEqual([]);
  expect(run.code, run.stderr).toBe(0);
  return summary;
}

describe("demo recovery from a killed task manager", () => {
  it.each(["tcp", "ws"])(
    "restores every task from the latest checkpoint and still verifies exactly once over --shuffle %s",
    async (shuffle) => {
      const run = await startDemo([
        "--shuffle",
        shuffle,
        "--records",
        "4m",
        "--checkpoint-interval",
        "200",
        "--checkpointing",
        "exactly-once",
        "--kill-task-manager-after",
        "1000",
        ...TWO_RESTARTS,
        "--json",
      ]).done;
      const summary = verifiedSummary(run);
      expect(run.stderr).toContain(
        "verified: the counts of all 4,000,000 words equal the reference",
      );
      expect(summary).toMatchObject({ verified: true, records: 4_000_000, restarts: 1 });
      expect(summary.checkpointingMode).toBe("EXACTLY_ONCE");

      // The kill came mid-job, after at least one completed checkpoint, and the restart
      // restored exactly that one.
      const killed = summary.killedTaskManager;
      expect(killed, "the job ended before the kill: raise --records").toBeDefined();
      const latest = killed?.latestCheckpoint;
      expect(latest, "no checkpoint completed before the kill").toBeGreaterThanOrEqual(1);
      expect(summary.checkpoints.restoredFrom).toBe(latest);
      expect(summary.checkpoints.completed).toBeGreaterThanOrEqual(latest as number);
      expect(run.stderr).toContain(
        `task manager ${killed?.index} (pid ${killed?.pid}) was lost: the job restarts from checkpoint ${latest}`,
      );

      // The killed one is reported lost, its replacement ran and shut down, nothing is left.
      const taskManagers = summary.processes.filter((p) => p.role === "taskmanager");
      expect(taskManagers).toHaveLength(3);
      expect(taskManagers.filter((p) => p.lost).map((p) => p.pid)).toEqual([killed?.pid]);
      for (const p of summary.processes) expect(isAlive(p.pid)).toBe(false);
    },
    60_000,
  );

  it("is not failed by a paused task manager that wakes after it was replaced", async () => {
    const demo = startDemo([
      "--records",
      "6m",
      "--checkpoint-interval",
      "200",
      "--checkpointing",
      "exactly-once",
      "-D",
      "heartbeat.interval=200ms",
      "-D",
      "heartbeat.timeout=1500ms",
      ...TWO_RESTARTS,
    ]);
    let pid = 0;
    await until(
      () => {
        const { stdout } = demo.output();
        pid = Number(/task manager 1 \(pid (\d+)\) ready/.exec(stdout)?.[1] ?? 0);
        return pid > 0 && /\] [1-9][\d,]*\/6,000,000 words/.test(stdout);
      },
      30_000,
      "the job to run on both task managers",
    );
    // Paused past heartbeat.timeout: the job manager gives up on it and restarts on a replacement.
    process.kill(pid, "SIGSTOP");
    try {
      await until(
        () => demo.output().stdout.includes(`(pid ${pid}) was lost: the job restarts`),
        30_000,
        "the job to restart without it",
      );
    } finally {
      process.kill(pid, "SIGCONT");
    }
    const run = await demo.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("verified: the counts of all 6,000,000 words equal the reference");
    // It woke, found itself given up on, registered again and was shut down with the others.
    expect(run.stderr).toContain(`task manager (pid ${pid}): lost the job manager`);
    expect(isAlive(pid)).toBe(false);
  }, 90_000);

  it.each(["tcp", "ws"])(
    "restores an unaligned checkpoint taken under back-pressure, replays its in-flight data and verifies exactly once over --shuffle %s",
    async (shuffle) => {
      const run = await startDemo([
        "--shuffle",
        shuffle,
        "--records",
        "600k",
        // Each counter takes 100 k words/s: the sources are back-pressured, the queues full, and
        // the job lasts at least 3 s, well past the kill.
        "--throttle",
        "100k",
        "--checkpoint-interval",
        "200",
        "--checkpointing",
        "exactly-once",
        "--kill-task-manager-after",
        "1500",
        "-D",
        "execution.checkpointing.unaligned.enabled=true",
        ...TWO_RESTARTS,
        "--json",
      ]).done;
      const summary = verifiedSummary(run);
      expect(summary).toMatchObject({ verified: true, records: 600_000, restarts: 1 });
      const latest = summary.killedTaskManager?.latestCheckpoint;
      expect(latest, "no checkpoint completed before the kill").toBeGreaterThanOrEqual(1);
      expect(summary.checkpoints.restoredFrom).toBe(latest);
      // The restored checkpoint really held in-flight data, and the restart replayed it.
      expect(summary.checkpoints.restoredChannelStateBytes).toBeGreaterThan(0);
      expect(run.stderr).toMatch(
        new RegExp(`checkpoint ${latest} held [\\d,]+ bytes of in-flight data, replayed`),
      );
      for (const p of summary.processes) expect(isAlive(p.pid)).toBe(false);
    },
    60_000,
  );
});
