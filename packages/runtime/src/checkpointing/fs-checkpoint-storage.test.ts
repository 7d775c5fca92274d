import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, ExecutionAttemptID, JobID } from "@sluice/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FsCheckpointStorage } from "./fs-checkpoint-storage.js";

let base: string;
beforeEach(async () => {
  base = await mkdtemp(path.join(tmpdir(), "sluice-fs-storage-test-"));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe("FsCheckpointStorage", () => {
  it("writes a task's snapshot to chk-<n> and reads the state back", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const handle = await storage.writeTaskState(3n, attempt, "Count (1/2)#0", '{"w1":2}');
    expect(handle.path).toBe(path.join(base, jobId.toString(), "chk-3", `${attempt}.json`));
    expect(handle.size).toBe((await readFile(handle.path)).length);
    const identity = { jobId, checkpointId: 3n, taskName: "Count (1/2)#0" };
    await expect(FsCheckpointStorage.readTaskState(handle, identity)).resolves.toEqual({ w1: 2 });
  });

  it("never lets a reader see a partly written snapshot", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const state = JSON.stringify({ words: "x".repeat(4 * 1024 * 1024) });
    const first = await storage.writeTaskState(1n, attempt, "T", state);
    let writing = true;
    const rewrites = (async () => {
      for (let i = 0; i < 20; i++) await storage.writeTaskState(1n, attempt, "T", state);
      writing = false;
    })();
    let reads = 0;
    let partial = 0;
    while (writing) {
      // Every read sees a whole file: the old one or the new one, never a truncated one.
      const text = await readFile(first.path, "utf8");
      if (text.length !== first.size) partial++;
      reads++;
    }
    await rewrites;
    expect(reads).toBeGreaterThan(0);
    expect(partial).toBe(0);
    expect(await readdir(path.dirname(first.path))).toEqual([`${attempt}.json`]);
  });

  it("names the file when a write fails and leaves no temporary file behind", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const target = path.join(storage.checkpointDirectory(5n), `${attempt}.json`);
    await mkdir(path.join(target, "occupied"), { recursive: true });
    await expect(storage.writeTaskState(5n, attempt, "T", "{}")).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining(`checkpoint 5 to ${target}`),
    });
    expect(await readdir(storage.checkpointDirectory(5n))).toEqual([`${attempt}.json`]);
  });

  it("refuses a missing snapshot and one of another checkpoint, naming the file", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const handle = await storage.writeTaskState(2n, new ExecutionAttemptID(), "T", "1");
    await expect(
      FsCheckpointStorage.readTaskState(handle, { jobId, checkpointId: 7n, taskName: "T" }),
    ).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringMatching(/checkpoint 7 belongs to job .*, checkpoint 2/),
    });
    await expect(
      FsCheckpointStorage.readTaskState(
        { path: path.join(base, "gone.json"), size: 1 },
        { jobId, checkpointId: 2n, taskName: "T" },
      ),
    ).rejects.toMatchObject({
      code: ErrorCodes.CHECKPOINT,
      message: expect.stringContaining("gone.json"),
    });
  });

  it("deletes a discarded snapshot with the folders it leaves empty, and whole checkpoints", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const a = await storage.writeTaskState(1n, new ExecutionAttemptID(), "A", "1");
    const b = await storage.writeTaskState(1n, new ExecutionAttemptID(), "B", "2");
    await storage.writeMetadata(2n, { tasks: [] });
    await storage.discardState(a);
    expect(await readdir(storage.checkpointDirectory(1n))).toEqual([path.basename(b.path)]);
    await storage.discardState(b);
    expect(await readdir(storage.jobDirectory)).toEqual(["chk-2"]);
    await storage.discardCheckpoint(2n);
    expect(await readdir(base)).toEqual([]);
  });
});
