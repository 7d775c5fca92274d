/**
 * End-to-end runs of `--mode batch` as an operator starts it: the sources write BLOCKING
 * partitions on their task managers and finish, the counters are deployed after them and read the
 * files, and the job's end deletes them.
 */
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { isAlive, lastJsonLine, startDemo, useDemoProcesses } from "./test-support/demo-process.js";

useDemoProcesses();

const tmp = mkdtempSync(path.join(tmpdir(), "sluice-batch-demo-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface BatchJson {
  codec: string;
  partitionBytes: number;
  bytesOnDisk: number;
  compressionRatio: number;
  networkMemoryBytes: number;
  networkMemoryMultiple: number;
  filesCreated: number;
  filesDeleted: number;
  stages: { vertex: string; deployedMs: number; finishedMs: number }[];
}

describe("demo --mode batch", () => {
  it.each([
    ["tcp", "@sluice/shuffle-tcp#TcpShuffleServiceFactory"],
    ["ws", "@sluice/shuffle-ws#WsShuffleServiceFactory"],
  ])(
    "runs the word count stage by stage over --shuffle %s, with data several times the network memory, and deletes the files",
    async (shuffle, factory) => {
      const tmpDirs = mkdtempSync(path.join(tmp, `${shuffle}-`));
      // 1 MiB of network memory and 16 sort buffers: 1m words (about 5 MB per task manager)
      // spill many regions, as the default run does with its 8 MiB.
      const run = await startDemo([
        "--mode",
        "batch",
        "--shuffle",
        shuffle,
        "--records",
        "1m",
        "-D",
        "taskmanager.memory.network.min=1mb",
        "-D",
        "taskmanager.network.sort-shuffle.min-buffers=16",
        "-D",
        `io.tmp.dirs=${tmpDirs}`,
        "--json",
      ]).done;
      expect(run.stderr).toContain("verified");
      expect(run.stderr).toMatch(/released +4 files deleted at the job's end/);
      expect(run.code).toBe(0);
      const summary = lastJsonLine(run.stdout);
      expect(summary).toMatchObject({
        verified: true,
        records: 1_000_000,
        shuffle: factory,
        buffersReturned: true,
      });
      const batch = summary.batch as BatchJson;
      expect(batch).toMatchObject({
        codec: "LZ4",
        networkMemoryBytes: 1024 * 1024,
        filesCreated: 4,
        filesDeleted: 4,
      });
      expect(batch.networkMemoryMultiple).toBeGreaterThanOrEqual(4);
      expect(batch.partitionBytes).toBe(summary.bytes);
      // Words compress well; the files hold the compressed data plus headers and the index.
      expect(batch.compressionRatio).toBeGreaterThan(1.5);
      expect(batch.bytesOnDisk).toBeLessThan(batch.partitionBytes);
      // Stage by stage: the counters were deployed only once every source had finished.
      const [sources, counters] = batch.stages;
      expect(sources?.vertex).toBe("Source: Words -> Tokenize");
      expect(counters?.vertex).toBe("Count");
      expect(counters?.deployedMs).toBeGreaterThanOrEqual(sources?.finishedMs as number);
      // Each task manager removed its folder with the (deleted) files when it closed.
      expect(readdirSync(tmpDirs)).toEqual([]);
      for (const p of summary.processes as { pid: number }[]) expect(isAlive(p.pid)).toBe(false);
    },
    60_000,
  );

  it("keeps a configured network memory over batch mode's defaults, and fails naming the keys when it cannot hold the sort buffers", async () => {
    const run = await startDemo([
      "--mode",
      "batch",
      "--records",
      "10k",
      "-D",
      "taskmanager.memory.network.min=1mb",
    ]).done;
    expect(run.code).toBe(1);
    // 1 MiB is 32 buffers of 32 KiB; batch mode's 128 sort buffers do not fit.
    expect(run.stderr).toContain("SLUICE_ERR_INSUFFICIENT_BUFFERS");
    expect(run.stderr).toContain("required 128, but only 32 of 32");
    expect(run.stderr).toContain("'taskmanager.memory.network.min'");
  }, 60_000);
});
