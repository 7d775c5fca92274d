/**
 * End-to-end runs of the demo over the remote shuffle (`--shuffle remote`), as an operator starts
 * it: the job manager's ShuffleMaster starts shuffle worker processes, the sources push their
 * BLOCKING partitions to them, the counters read the partitions from them, and the job's end
 * deletes the files on the workers.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { freePort } from "@sluice/core/testing";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  startDemo,
  startSessionCluster,
  startSluice,
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

  it("runs as a thin client of a session cluster of sluice processes: a job manager, a shuffle worker that registers with its shuffle manager, and two task managers", async () => {
    const managerPort = await freePort();
    const shuffle = [
      "-D",
      "shuffle-service-factory.class=remote",
      "-D",
      "remote-shuffle.manager.rpc-address=127.0.0.1",
      "-D",
      `remote-shuffle.manager.rpc-port=${managerPort}`,
    ];
    const cluster = await startSessionCluster({
      rpcPort: await freePort(),
      restPort: await freePort(),
      configuration: shuffle,
    });
    const dir = mkdtempSync(path.join(tmp, "shuffle-worker-"));
    const worker = startSluice(["shuffleworker", ...shuffle, "-D", `io.tmp.dirs=${dir}`]);
    await until(
      () => /ready: rpc /.test(worker.output().stdout) || worker.output().code !== null,
      20_000,
      "the shuffle worker to register",
    );
    const run = await startDemo([
      "--jobmanager",
      `127.0.0.1:${cluster.restPort}`,
      "--mode",
      "batch",
      "--records",
      "100k",
      "--json",
    ]).done;
    expect(run.code, run.stderr).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({ verified: true, records: 100_000 });
    // The worker outlives the job; the job's end deleted its files.
    expect(worker.output().code).toBeNull();
    expect(readdirSync(dir).flatMap((entry) => readdirSync(path.join(dir, entry)))).toEqual([]);
    for (const p of [worker, ...cluster.processes]) p.child.kill("SIGTERM");
    for (const p of [worker, ...cluster.processes]) {
      expect((await p.done).code, p.output().stderr).toBe(143);
    }
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
