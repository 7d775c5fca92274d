/**
 * The demo at a parallelism its network memory cannot give every pool its full buffers: with
 * Flink's settings (Sluice's default too), parallelism 64 on 32 MiB per task manager fails at
 * deploy with 'Insufficient number of network buffers'; with
 * `taskmanager.network.memory.exclusive-buffers-fallback` the short pools fall back, say so, and
 * the counts verify. A parallelism the memory cannot serve even so is refused at start-up,
 * naming what it needs.
 */
import { describe, expect, it } from "vitest";
import { lastJsonLine, startDemo, useDemoProcesses } from "./test-support/demo-process.js";

useDemoProcesses();

const network = (mb: number) => [
  "-D",
  `taskmanager.memory.network.min=${mb}mb`,
  "-D",
  `taskmanager.memory.network.max=${mb}mb`,
  "-D",
  "taskmanager.network.memory.exclusive-buffers-fallback=true",
];

describe("the demo on little network memory", () => {
  it("verifies parallelism 64 on two task managers of 32 MiB each, naming the pools that fell back", async () => {
    const run = await startDemo([
      "--parallelism",
      "64",
      "--task-managers",
      "2",
      "--records",
      "400k",
      "--json",
      ...network(32),
    ]).done;
    expect(run.code, run.stderr).toBe(0);
    expect(lastJsonLine(run.stdout)).toMatchObject({
      verified: true,
      buffersReturned: true,
      parallelism: 64,
    });
    expect(run.stderr).toMatch(
      /SLUICE_BUFFERS_FALLBACK.*output pool of .* is guaranteed \d+ network buffers instead of 65/,
    );
  }, 180_000);

  it("refuses parallelism 128 on 32 MiB at start-up, saying how much it needs", async () => {
    const run = await startDemo([
      "--parallelism",
      "128",
      "--task-managers",
      "2",
      "--records",
      "1k",
      ...network(32),
    ]).done;
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toMatch(/needs at least 64 MiB of network memory per task manager/);
  }, 60_000);
});
