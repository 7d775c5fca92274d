/**
 * End-to-end runs of the demo over the remote shuffle (`--shuffle remote`), as an operator starts
 * it: the job manager's ShuffleMaster starts shuffle worker processes, the sources push their
 * BLOCKING partitions to them, the counters read the partitions from them, and the job's end
 * deletes the files on the workers.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  startDemo,
  until,
  useDemoProcesses,
} from "./test-support/demo-process.js";

useDemoProcesses();

const tmp = mkdtempSync(path.join(tmpdir(), "sluice-remote-demo-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const WORKER_LINE =
  /^shuffle worker (\d) \(pid (\d+)\) ready: rpc 127\.0\.0\.1:\d+, data 127\.0\.0\.1:\d+, incarnation [0-9a-f]{32}$/gm;

/** A verified batch run of 1m words over --shuffle remote, with `extra` flags; its JSON summary. */
async function verifiedRemoteRun(
  extra: readonly string[],
): Promise<{ stderr: string; summary: Record<string, unknown> }> {
  const run = await startDemo([
    "--mode",
    "batch",
    "--shuffle",
    "remote",
    "--records",
    "1m",
    ...extra,
    "-D",
    "rest.port=0",
    "--json",
  ]).done;
  expect(run.stderr).toContain("verified: the counts of all 1,000,000 words equal the reference");
  expect(run.code).toBe(0);
  return { stderr: run.stderr, summary: lastJsonLine(run.stdout) };
}

describe("demo --shuffle remote", () => {
  it("runs the batch word count over shuffle worker processes it starts, which store the files and delete them at the job's end", async () => {
    const tmpDirs = mkdtempSync(path.join(tmp, "task-managers-"));
    const run = await startDemo([
      "--mode",
      "batch",
      "--shuffle",
      "remote",
      "--shuffle-workers",
      "3",
      "--records",
      "500k",
      "-D",
      "rest.port=0",
      "-D",
      `io.tmp.dirs=${tmpDirs}`,
      "--json",
    ]).done;
    expect(run.stderr).toContain("verified");
    expect(run.code).toBe(0);
    const workers = [...run.stderr.matchAll(WORKER_LINE)];
    expect(workers.map((line) => line[1])).toEqual(["0", "1", "2"]);
    expect(run.stderr).toMatch(/on disk .* in 4 files \(data \+ index\) on 3 shuffle workers/);
    expect(run.stderr).toMatch(/released +4 files deleted at the job's end/);
    const summary = lastJsonLine(run.stdout);
    expect(summary).toMatchObject({
      verified: true,
      records: 500_000,
      shuffle: "@sluice/shuffle-remote#RemoteShuffleServiceFactory",
    });
    expect(summary.batch).toMatchObject({ codec: "NONE", filesCreated: 4, filesDeleted: 4 });
    expect((summary.batch as { partitionBytes: number }).partitionBytes).toBe(summary.bytes);
    // The task managers stored nothing: their folders are empty.
    expect(readdirSync(tmpDirs)).toEqual([]);
    // The shuffle workers stopped with the job manager.
    for (const line of workers) expect(isAlive(Number(line[2]))).toBe(false);
  }, 90_000);

  it("refuses a streaming run before starting anything, exit code 2", async () => {
    const run = await startDemo(["--shuffle", "remote", "--records", "10k", "-D", "rest.port=0"])
      .done;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("stores BLOCKING partitions only: run it with --mode batch");
    expect(run.stdout).not.toContain("task manager 0");
  }, 60_000);

  it("refuses --shuffle-workers for another shuffle", async () => {
    const run = await startDemo(["--mode", "batch", "--shuffle-workers", "2", "--records", "1k"])
      .done;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("--shuffle-workers starts shuffle workers of the remote shuffle");
  }, 60_000);

  it("runs in the standalone roles: jobmanager, a shuffleworker that registers with its shuffle manager, and two taskmanagers", async () => {
    const jm = startDemo([
      "jobmanager",
      "--bind",
      "127.0.0.1:0",
      "--mode",
      "batch",
      "--shuffle",
      "remote",
      "--records",
      "100k",
      "-D",
      "remote-shuffle.manager.rpc-port=0",
      "-D",
      "rest.port=0",
    ]);
    let jmPort = 0;
    let managerPort = 0;
    await until(
      () => {
        const { stdout, stderr, code } = jm.output();
        if (code !== null) throw new Error(`the job manager exited with ${code}:\n${stderr}`);
        jmPort = Number(/listening on wss?:\/\/127\.0\.0\.1:(\d+)/.exec(stdout + stderr)?.[1] ?? 0);
        managerPort = Number(/shuffle manager: 127\.0\.0\.1:(\d+)/.exec(stdout)?.[1] ?? 0);
        return jmPort > 0 && managerPort > 0;
      },
      20_000,
      "the job manager and its shuffle manager to listen",
    );
    const dir = mkdtempSync(path.join(tmp, "shuffle-worker-"));
    const worker = startDemo([
      "shuffleworker",
      "--jobmanager",
      `127.0.0.1:${managerPort}`,
      "-D",
      `io.tmp.dirs=${dir}`,
    ]);
    for (let i = 0; i < 2; i++) {
      startDemo(["taskmanager", "--jobmanager", `127.0.0.1:${jmPort}`, "--quiet"]);
    }
    const run = await jm.done;
    expect(run.stdout).toContain("verified");
    expect(run.code).toBe(0);
    const pid = worker.child.pid;
    expect(run.stdout).toContain(`shuffle worker 0 (pid ${pid}) ready`);
    expect(run.stdout).toMatch(/in 4 files \(data \+ index\) on 1 shuffle workers/);
    expect(worker.output().stdout).toMatch(/^shuffle worker \(pid \d+\) ready: rpc /);
    // The worker outlives the job; the job's end deleted its files.
    expect(readdirSync(dir).flatMap((entry) => readdirSync(path.join(dir, entry)))).toEqual([]);
    worker.child.kill("SIGTERM");
    expect((await worker.done).code).toBe(0);
  }, 90_000);

  it("survives a task manager killed between the stages without re-running any source: their partitions live on the shuffle workers", async () => {
    const run = await verifiedRemoteRun(["--kill-task-manager-between-stages"]);
    const summary = run.summary as {
      restarts: number;
      rerunTasks: string[];
      killedTaskManager?: { tasks: string[] };
    };
    // The killed task manager had run a source; the source's partition was not on it.
    const lostSources = (summary.killedTaskManager?.tasks ?? []).filter((t) =>
      t.startsWith("Source"),
    );
    expect(lostSources.length).toBeGreaterThan(0);
    expect(summary.restarts).toBeGreaterThanOrEqual(1);
    expect(summary.rerunTasks.length).toBeGreaterThan(0);
    expect(summary.rerunTasks.filter((t) => t.startsWith("Source"))).toEqual([]);
  }, 120_000);

  it("re-runs the producers of a killed shuffle worker's partitions, and only those, when it is killed mid-read", async () => {
    const run = await verifiedRemoteRun(["--kill-shuffle-worker-after", "100"]);
    const killed =
      /killing shuffle worker \(pid (\d+)\) with SIGKILL .* it stores (\d+) partitions?/.exec(
        run.stderr,
      );
    expect(killed, run.stderr).not.toBeNull();
    const stored = Number(killed?.[2]);
    expect(stored).toBeGreaterThan(0);
    const summary = run.summary as { restarts: number; rerunTasks: string[] };
    expect(summary.restarts).toBeGreaterThanOrEqual(1);
    // Its partitions' producers re-ran (one source each: every source writes one partition),
    // the other sources did not.
    const rerunSources = summary.rerunTasks.filter((t) => t.startsWith("Source"));
    expect(rerunSources).toHaveLength(stored);
    expect(rerunSources.length).toBeLessThan(2);
    expect(run.stderr).toContain(`  re-ran         ${summary.rerunTasks.join(", ")}`);
    expect(isAlive(Number(killed?.[1]))).toBe(false);
  }, 120_000);
});
