/**
 * `--mode batch` survives a killed task manager by region failover, as Flink's
 * RestartPipelinedRegionFailoverStrategy does for a batch job: each source subtask and each
 * counter is a region of its own (the exchange is BLOCKING), so a lost task manager re-runs its
 * sources, whose partitions went with it, and every counter, since each reads every source's
 * partition (ALL_TO_ALL) and reads it again; the sources on the surviving task managers do not
 * re-run, their files are still served.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  type Run,
  startDemo,
  useDemoProcesses,
} from "./test-support/demo-process.js";
import { COUNT_VERTEX, SOURCE_VERTEX } from "./word-count-job.js";

useDemoProcesses();

const tmp = mkdtempSync(path.join(tmpdir(), "sluice-batch-failover-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface FailoverSummary {
  verified: boolean;
  differences?: string[];
  records: number;
  restarts: number;
  rerunTasks: string[];
  killedTaskManager?: { index: number; pid: number; afterMs: number; tasks: string[] };
  processes: { role: string; pid: number; lost?: boolean }[];
}

const PARALLELISM = 2;
const COUNTERS = Array.from(
  { length: PARALLELISM },
  (_, i) => `${COUNT_VERTEX} (${i + 1}/${PARALLELISM})`,
);

/** The run's JSON summary, once it is checked to have no differences and the run exited 0. */
function verifiedSummary(run: Run): FailoverSummary {
  const summary = lastJsonLine(run.stdout) as unknown as FailoverSummary;
  expect(summary.differences ?? [], run.stderr).toEqual([]);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stderr).toContain("verified: the counts of all 1,000,000 words equal the reference");
  return summary;
}

/** The re-run set is Flink's: the lost task manager's sources and every counter, nothing else. */
function expectFlinksRerunSet(summary: FailoverSummary): void {
  const killed = summary.killedTaskManager;
  expect(killed, "nothing was killed").toBeDefined();
  const lostSources = (killed?.tasks ?? []).filter((task) => task.startsWith(SOURCE_VERTEX));
  expect(lostSources.length, "the killed task manager ran no source").toBeGreaterThan(0);
  expect(summary.restarts).toBeGreaterThanOrEqual(1);
  expect([...summary.rerunTasks].sort()).toEqual([...lostSources, ...COUNTERS].sort());
  const allSources = Array.from(
    { length: PARALLELISM },
    (_, i) => `${SOURCE_VERTEX} (${i + 1}/${PARALLELISM})`,
  );
  const kept = allSources.filter((source) => !lostSources.includes(source));
  expect(kept.length, "every source was on the killed task manager").toBeGreaterThan(0);
  for (const source of kept) expect(summary.rerunTasks).not.toContain(source);
}

/** The killed one is reported lost, a replacement ran, and every process has exited. */
function expectReplaced(summary: FailoverSummary): void {
  const taskManagers = summary.processes.filter((p) => p.role === "taskmanager");
  expect(taskManagers).toHaveLength(3);
  expect(taskManagers.filter((p) => p.lost).map((p) => p.pid)).toEqual([
    summary.killedTaskManager?.pid,
  ]);
  for (const p of summary.processes) expect(isAlive(p.pid)).toBe(false);
}

function batchRun(shuffle: string, kill: readonly string[]): Promise<Run> {
  const tmpDirs = mkdtempSync(path.join(tmp, `${shuffle}-`));
  return startDemo([
    "--mode",
    "batch",
    "--shuffle",
    shuffle,
    "--records",
    "1m",
    ...kill,
    "-D",
    `io.tmp.dirs=${tmpDirs}`,
    "--json",
  ]).done;
}

describe("demo --mode batch with a killed task manager", () => {
  it.each(["tcp", "ws"])(
    "re-runs only the lost task manager's sources and the counters when it is killed between the stages, and verifies, over --shuffle %s",
    async (shuffle) => {
      const run = await batchRun(shuffle, ["--kill-task-manager-between-stages"]);
      const summary = verifiedSummary(run);
      // No strategy was configured: the demo chose one and said so.
      expect(run.stderr).toContain("the demo sets restart-strategy.type=fixed-delay");
      expect(run.stderr).toMatch(
        /killing task manager \d+ \(pid \d+\) with SIGKILL .* into the job \(the counting stage started/,
      );
      expectFlinksRerunSet(summary);
      expect(run.stderr).toContain(`  re-ran         ${summary.rerunTasks.join(", ")}`);
      expectReplaced(summary);
    },
    120_000,
  );

  it.each(["tcp", "ws"])(
    "re-runs the same regions when it is killed while the counters read, and verifies, over --shuffle %s",
    async (shuffle) => {
      // The counters read 1m words in a few hundred milliseconds (the whole job takes about
      // 1.2 s on 2 cores, and 200 ms was once too late: the stage had ended); 20 ms into their
      // stage they are deployed and reading.
      const run = await batchRun(shuffle, ["--kill-task-manager-after", "20"]);
      const summary = verifiedSummary(run);
      expectFlinksRerunSet(summary);
      expectReplaced(summary);
    },
    120_000,
  );
});
