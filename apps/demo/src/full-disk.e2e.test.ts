/**
 * A disk that fills up under the job: the checkpoint folder and the batch spill folder each on a
 * real 64 KiB tmpfs. The job must end with an error that names the folder and the cause, not loop
 * or hang, and leave no process behind.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  isAlive,
  lastJsonLine,
  startDemo,
  TWO_RESTARTS,
  useDemoProcesses,
} from "./test-support/demo-process.js";

/** Mounts a 64 KiB tmpfs; returns why it cannot, or undefined. */
function mountSmallDisk(at: string): string | undefined {
  if (process.platform !== "linux") return `tmpfs needs Linux, this is ${process.platform}`;
  if (process.getuid?.() !== 0) return "mounting a tmpfs needs root";
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", at], { stdio: "pipe" });
    return undefined;
  } catch (error) {
    return `mount -t tmpfs failed: ${(error as Error).message}`;
  }
}

const root = mkdtempSync(path.join(tmpdir(), "sluice-full-disk-"));
const disk = path.join(root, "disk");
mkdirSync(disk);
const unavailable = mountSmallDisk(disk);

useDemoProcesses();
afterAll(() => {
  if (unavailable === undefined) execFileSync("umount", [disk]);
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(unavailable !== undefined)(`a full disk (${unavailable ?? "tmpfs"})`, () => {
  it("fails a checkpoint that cannot be written for lack of space, naming the folder, and prints every restart that follows with its cause", async () => {
    const folder = path.join(disk, "checkpoints");
    const run = await startDemo([
      "--records",
      "2m",
      "--checkpoint-interval",
      "200",
      "-D",
      `state.checkpoints.dir=${folder}`,
      ...TWO_RESTARTS,
      "--json",
    ]).done;
    expect(run.code).toBe(1);
    // Each failover says why: a restart loop is never silent.
    const restarts = run.stderr.split("\n").filter((line) => line.includes("the job fails over"));
    expect(restarts).toHaveLength(2);
    for (const line of restarts) expect(line).toMatch(/ENOSPC/);
    expect(run.stderr).toContain("SLUICE_ERR_CHECKPOINT");
    expect(run.stderr).toContain("execution.checkpointing.tolerable-failed-checkpoints");
    expect(run.stderr).toMatch(/ENOSPC: no space left on device/);
    // The file that could not be written, in the configured folder.
    expect(run.stderr).toContain(folder);
    const summary = lastJsonLine(run.stdout);
    expect(summary.verified).toBe(false);
    for (const p of summary.processes as { pid: number }[]) expect(isAlive(p.pid)).toBe(false);
  }, 120_000);

  it("fails a batch job whose io.tmp.dirs fills up with the spill file's error, naming the folder", async () => {
    const folder = path.join(disk, "spill");
    mkdirSync(folder);
    const run = await startDemo([
      "--mode",
      "batch",
      "--records",
      "1m",
      "-D",
      `io.tmp.dirs=${folder}`,
      "--json",
    ]).done;
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("SLUICE_ERR_PARTITION_FILE_WRITE");
    expect(run.stderr).toMatch(/ENOSPC: no space left on device/);
    expect(run.stderr).toContain(folder);
    // The write error is the task's failure, not a cancellation that hides it.
    expect(run.stderr).not.toContain("SLUICE_ERR_CANCELLED");
    const summary = lastJsonLine(run.stdout);
    expect(summary.verified).toBe(false);
    for (const p of summary.processes as { pid: number }[]) expect(isAlive(p.pid)).toBe(false);
  }, 120_000);
});
