/**
 * End-to-end runs of the demo as an operator starts it: `node apps/demo/dist/main.js ...`, with
 * real task-manager processes. Child processes run compiled JavaScript, so the demo (and the
 * packages it uses) is built first when dist/ is missing or older than the sources.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { waitFor } from "@sluice/core/testing";
import { isAlive, lastJsonLine } from "@sluice/harness/testing";
import { afterAll, describe, expect, it } from "vitest";
import { REPO, startDemo as start, useDemoProcesses } from "./test-support/demo-process.js";

useDemoProcesses();

const tmp = mkdtempSync(path.join(tmpdir(), "sluice-demo-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("demo end to end", () => {
  it.each([
    ["tcp", "@sluice/shuffle-tcp#TcpShuffleServiceFactory"],
    ["ws", "@sluice/shuffle-ws#WsShuffleServiceFactory"],
  ])(
    "verifies the word count over --shuffle %s and prints one JSON line last",
    async (shuffle, factory) => {
      const run = await start(["--shuffle", shuffle, "--records", "60k", "--json"]).done;
      expect(run.stderr).toContain("verified");
      expect(run.code).toBe(0);
      const summary = lastJsonLine(run.stdout);
      expect(summary).toMatchObject({
        verified: true,
        records: 60_000,
        shuffle: factory,
        buffersReturned: true,
      });
      expect(summary.durationMs).toBeGreaterThan(0);
      expect(summary.recordsPerSecond).toBeGreaterThan(0);
      const processes = summary.processes as { role: string; pid: number; peakRssMb: number }[];
      expect(processes.map((p) => p.role)).toEqual(["jobmanager", "taskmanager", "taskmanager"]);
      for (const p of processes) {
        expect(p.peakRssMb).toBeGreaterThan(0);
        expect(isAlive(p.pid)).toBe(false);
      }
    },
    60_000,
  );

  it("loads a plugin given as a path outside the workspace, from another working directory", async () => {
    const plugin = path.join(tmp, "my-shuffle.mjs");
    const tcp = pathToFileURL(path.join(REPO, "packages/shuffle-tcp/dist/index.js")).href;
    writeFileSync(
      plugin,
      `export { TcpShuffleServiceFactory as MyShuffle } from ${JSON.stringify(tcp)};\n`,
    );
    const run = await start(
      ["--shuffle", "./my-shuffle.mjs#MyShuffle", "--records", "20k", "--json"],
      { cwd: tmp },
    ).done;
    expect(run.code).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({
      verified: true,
      shuffle: "./my-shuffle.mjs#MyShuffle",
    });
  }, 60_000);

  it("fails with the loader's error, naming the key and the value, and exits 2, for an unknown plugin", async () => {
    const run = await start(["--shuffle", "nope", "--records", "1000"]).done;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('shuffle-service-factory.class = "nope"');
    expect(run.stderr).toContain("SLUICE_ERR_PLUGIN_NOT_FOUND");
    expect(run.stdout).not.toContain("task manager 0");
  }, 30_000);

  it("exits with code 2 and a clear message for a bad option", async () => {
    const run = await start(["--records", "x"]).done;
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      '--records expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "x"',
    );
  }, 30_000);

  it("fails within seconds, naming the task manager, when one is killed, and leaves no process behind", async () => {
    const demo = start(["--records", "200m"]);
    const pids: number[] = [];
    await waitFor(
      () => {
        const out = demo.output().stdout;
        pids.length = 0;
        for (const match of out.matchAll(/task manager (\d) \(pid (\d+)\) ready/g))
          pids[Number(match[1])] = Number(match[2]);
        // Mid-run: both workers up and a progress line showing words flowing.
        return pids.filter(Boolean).length === 2 && /\] [1-9][\d,]*\/200,000,000 words/.test(out);
      },
      { what: "the job to run", timeoutMs: 30_000, intervalMs: 50 },
    );
    const victim = pids[1] as number;
    // Operators recognise workers in `ps` by the word "taskmanager" in their command line.
    expect(readFileSync(`/proc/${victim}/cmdline`, "utf8").split("\0")).toContain("taskmanager");
    const killedAt = Date.now();
    process.kill(victim, "SIGKILL");
    const run = await demo.done;
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `error: the job failed: task manager 1 (pid ${victim}) was killed by signal SIGKILL`,
    );
    expect(run.stderr).toContain("all 2 task manager processes have exited");
    for (const pid of [demo.child.pid as number, ...pids]) expect(isAlive(pid)).toBe(false);
  }, 60_000);
});
