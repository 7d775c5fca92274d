/**
 * Exactly once to the outside: the demo with `--sink files`, checkpoints every 200 ms and a
 * task manager SIGKILLed mid-job. The verification reads the committed part files, not the
 * counters' results: summed, their `word<TAB>count` lines must equal the reference, and no
 * in-progress or pending part file may be left. With a file sink the demo kills at a half-taken
 * checkpoint (one counter pre-committed, the killed one not yet), so the checkpoint never
 * completes: a sink that committed at snapshot time would show the words between the restored
 * checkpoint and that snapshot twice (checked by hand: with the pre-commit renaming straight to
 * the committed name, both variants fail on the counts).
 */
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  startDemo,
  TWO_RESTARTS,
  useDemoProcesses,
} from "./test-support/demo-process.js";

useDemoProcesses();

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-demo-sink-"));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

interface SinkSummary {
  verified: boolean;
  differences?: string[];
  records: number;
  restarts: number;
  killedTaskManager?: { latestCheckpoint?: number };
  sink?: { committedFiles: number; committedBytes: number; abortedTransactions: number };
  processes: { pid: number }[];
}

describe("demo --sink files", () => {
  it.each(["tcp", "ws"])(
    "commits each word's count exactly once to the output folder across a killed task manager over --shuffle %s",
    async (shuffle) => {
      const output = path.join(base, "out");
      const run = await startDemo([
        "--shuffle",
        shuffle,
        "--records",
        "4m",
        "--checkpoint-interval",
        "200",
        "--kill-task-manager-after",
        "1000",
        ...TWO_RESTARTS,
        "--sink",
        "files",
        "--output",
        output,
        "--json",
      ]).done;
      const summary = lastJsonLine(run.stdout) as unknown as SinkSummary;
      expect(summary.differences ?? [], run.stderr).toEqual([]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.stderr).toContain(
        "verified: the committed part files hold the counts of all 4,000,000 words exactly once",
      );
      expect(run.stderr).toMatch(
        /killing task manager \d+ .*; Count \(\d\/2\) has not pre-committed the checkpoint another counter pre-committed/,
      );
      expect(summary.restarts).toBe(1);
      expect(summary.killedTaskManager?.latestCheckpoint).toBeGreaterThanOrEqual(1);

      // The folder itself, read here again: plain-text part files only, their sizes reported.
      const entries = await readdir(output);
      expect(entries.filter((name) => name.startsWith("."))).toEqual([]);
      let bytes = 0;
      let words = 0;
      for (const name of entries) {
        expect(name).toMatch(/^part-[01]-[0-9a-f]{32}-[0-9a-f]+-\d+-\d+$/);
        const text = await readFile(path.join(output, name), "utf8");
        bytes += Buffer.byteLength(text);
        for (const line of text.split("\n")) {
          if (line === "") continue;
          expect(line).toMatch(/^[^\t]+\t\d+$/);
          words += Number(line.split("\t")[1]);
        }
      }
      expect(words).toBe(4_000_000);
      expect(summary.sink).toEqual({
        committedFiles: entries.length,
        committedBytes: bytes,
        abortedTransactions: expect.any(Number),
      });
      // The restored counters aborted the transactions open at the checkpoint they restored.
      expect(summary.sink?.abortedTransactions).toBeGreaterThanOrEqual(2);
      for (const p of summary.processes) expect(isAlive(p.pid)).toBe(false);
    },
    90_000,
  );

  it("refuses an output folder that is not empty, with exit code 2", async () => {
    const output = path.join(base, "used");
    const args = [
      "--records",
      "1000",
      "--checkpoint-interval",
      "200",
      "--sink",
      "files",
      "--output",
      output,
    ];
    await startDemo(args).done;
    await writeFile(path.join(output, "part-0-0-99"), "w\t1\n");
    const run = await startDemo(args).done;
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/--output .*used is not empty/);
  }, 60_000);
});
