import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes, ExecutionAttemptID, JobID } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CheckpointError } from "./checkpoint-error.js";
import { FsCheckpointStorage } from "./fs-checkpoint-storage.js";
import type { TaskChannelState } from "./task-channel-state.js";

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

  it("deletes an aborted checkpoint's folder while tasks still write their snapshots into it", async () => {
    // A task manager may still be writing its snapshot of a checkpoint the job side just
    // aborted: the folder gains entries while it is being deleted.
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    await storage.writeTaskState(5n, new ExecutionAttemptID(), "Count (1/2)#0", '{"w":1}');
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing && i < 400; i++) {
        await storage
          .writeTaskState(5n, new ExecutionAttemptID(), `Count (2/2)#${i}`, '{"w":1}')
          .catch(() => undefined);
      }
    })();
    try {
      await storage.discardCheckpoint(5n);
    } finally {
      writing = false;
      await writer;
    }
    // A write that began before the discard may land after it (the late acknowledgement's
    // snapshot, deleted by the job side as it arrives); once they settled, the folder goes.
    await storage.discardCheckpoint(5n);
    expect(await readdir(base)).toEqual([]);
  });

  it("follows no symbolic link below state.checkpoints.dir when it deletes: files a link leads to stay", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const outside = await mkdtemp(path.join(tmpdir(), "sluice-fs-storage-outside-"));
    try {
      const victim = path.join(outside, `${attempt}.json`);
      await writeFile(victim, "keep me");
      await writeFile(path.join(outside, "other"), "keep me too");
      // The checkpoint's folder is a link to a folder outside.
      await mkdir(storage.jobDirectory, { recursive: true });
      await symlink(outside, storage.checkpointDirectory(1n));
      const handle = { path: storage.taskStateFile(1n, attempt), size: 7 };
      await expectRejection(
        storage.discardState(handle),
        CheckpointError,
        ErrorCodes.CHECKPOINT,
        `refused to delete in ${path.join(await realpath(base), jobId.toString(), "chk-1")}: it is a symbolic link`,
      );
      await expectRejection(
        storage.discardCheckpoint(1n),
        CheckpointError,
        ErrorCodes.CHECKPOINT,
        "is a symbolic link",
      );
      // The job's folder is a link to a folder outside.
      await rm(storage.jobDirectory, { recursive: true });
      await mkdir(path.join(outside, "chk-2"));
      await writeFile(path.join(outside, "chk-2", `${attempt}.json`), "keep me");
      await symlink(outside, storage.jobDirectory);
      await expect(storage.discardCheckpoint(2n)).rejects.toThrow(/is a symbolic link/);
      await expect(
        storage.discardState({ path: storage.taskStateFile(2n, attempt), size: 7 }),
      ).rejects.toThrow(/is a symbolic link/);
      // A link in a snapshot's place is removed itself.
      await rm(storage.jobDirectory);
      await mkdir(storage.checkpointDirectory(3n), { recursive: true });
      await symlink(victim, storage.taskStateFile(3n, attempt));
      await storage.discardCheckpoint(3n);
      expect(await readFile(victim, "utf8")).toBe("keep me");
      expect(await readFile(path.join(outside, "other"), "utf8")).toBe("keep me too");
      expect(await readFile(path.join(outside, "chk-2", `${attempt}.json`), "utf8")).toBe(
        "keep me",
      );
      expect(await readdir(base)).toEqual([]);
      // Nor does it delete a file that is not a snapshot of one of its checkpoint folders.
      await expect(storage.discardState({ path: victim, size: 7 })).rejects.toThrow(
        /refused to delete/,
      );
      expect(await readFile(victim, "utf8")).toBe("keep me");
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it("deletes through a state.checkpoints.dir that is itself a link, inside the folder it points to", async () => {
    const real = await mkdtemp(path.join(tmpdir(), "sluice-fs-storage-real-"));
    const link = path.join(base, "checkpoints");
    try {
      await symlink(real, link);
      const storage = new FsCheckpointStorage(link, new JobID());
      const handle = await storage.writeTaskState(1n, new ExecutionAttemptID(), "A", "1");
      await storage.discardState(handle);
      expect(await readdir(real)).toEqual([]);
    } finally {
      await rm(real, { recursive: true, force: true });
    }
  });

  it("writes the channel state of an unaligned checkpoint next to the snapshot and reads it back", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const channelState: TaskChannelState = {
      inputChannelState: [{ info: { gateIndex: 1, channelIndex: 2 }, data: Uint8Array.of(1, 2) }],
      resultSubpartitionState: [
        { info: { partitionIndex: 0, subpartitionIndex: 3 }, data: Uint8Array.of(9) },
      ],
    };
    // A task with no state of its own still has a snapshot file naming its channel state.
    const handle = await storage.writeTaskState(2n, attempt, "T", undefined, channelState);
    const folder = path.join(base, jobId.toString(), "chk-2");
    expect((await readdir(folder)).sort()).toEqual(
      [`${attempt}.channel-state`, `${attempt}.json`].sort(),
    );
    const identity = { jobId, checkpointId: 2n, taskName: "T" };
    const snapshot = await FsCheckpointStorage.readTaskSnapshot(handle, identity);
    expect(snapshot.state).toBeUndefined();
    expect(snapshot.channelState).toEqual(channelState);
    // Discarding the snapshot takes the channel state with it.
    await storage.discardState(handle);
    await expect(readdir(folder)).rejects.toMatchObject({ code: "ENOENT" });
  });

  it("fails loudly on a channel state file that does not match its snapshot", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const attempt = new ExecutionAttemptID();
    const channelState: TaskChannelState = {
      inputChannelState: [{ info: { gateIndex: 0, channelIndex: 0 }, data: Uint8Array.of(7) }],
      resultSubpartitionState: [],
    };
    const handle = await storage.writeTaskState(4n, attempt, "T", "1", channelState);
    const file = path.join(base, jobId.toString(), "chk-4", `${attempt}.channel-state`);
    const original = await readFile(file);
    await writeFile(file, Buffer.from("not channel state"));
    const identity = { jobId, checkpointId: 4n, taskName: "T" };
    await expectRejection(
      FsCheckpointStorage.readTaskSnapshot(handle, identity),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "has 17 bytes, but the snapshot recorded",
    );
    // Right size, wrong content.
    await writeFile(file, Buffer.alloc(original.length));
    await expectRejection(
      FsCheckpointStorage.readTaskSnapshot(handle, identity),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "is damaged: the CRC-32 of its",
    );
  });

  it("refuses a snapshot or _metadata that was altered into other valid JSON, truncated or emptied, naming the file", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(base, jobId);
    const handle = await storage.writeTaskState(6n, new ExecutionAttemptID(), "T", '{"count":5}');
    const identity = { jobId, checkpointId: 6n, taskName: "T" };
    const original = await readFile(handle.path, "utf8");
    // Another count, the same length, still valid JSON: only the checksum tells.
    await writeFile(handle.path, original.replace('"count":5', '"count":6'));
    await expectRejection(
      FsCheckpointStorage.readTaskState(handle, identity),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      `T: the snapshot ${handle.path} of checkpoint 6 is damaged: the CRC-32 of its`,
    );
    await writeFile(handle.path, original.slice(0, -3));
    await expect(FsCheckpointStorage.readTaskState(handle, identity)).rejects.toThrow(
      /is damaged: it has \d+ bytes, but its checkpoint recorded/,
    );
    // A handle whose recorded size matches what is left is caught by the header's length.
    await expect(
      FsCheckpointStorage.readTaskState({ ...handle, size: handle.size - 3 }, identity),
    ).rejects.toThrow(/its header records \d+ bytes, but \d+ follow/);
    await writeFile(handle.path, "");
    await expect(
      FsCheckpointStorage.readTaskState({ ...handle, size: 0 }, identity),
    ).rejects.toThrow(/has no SLUICE-CHECKPOINT header/);

    const metadata = await storage.writeMetadata(6n, { tasks: [{ subtaskIndex: 1 }] });
    expect(await FsCheckpointStorage.readMetadata(metadata)).toMatchObject({
      checkpointId: "6",
      tasks: [{ subtaskIndex: 1 }],
    });
    const text = await readFile(metadata, "utf8");
    await writeFile(metadata, text.replace('"subtaskIndex":1', '"subtaskIndex":2'));
    await expectRejection(
      FsCheckpointStorage.readMetadata(metadata),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      `the metadata ${metadata} is damaged`,
    );
  });
});

describe("FsCheckpointStorage savepoints", () => {
  it("creates a fresh savepoint folder named after the job, and writes a task's snapshot into it", async () => {
    const jobId = new JobID();
    const target = path.join(base, "savepoints");
    const location = await FsCheckpointStorage.initializeLocationForSavepoint(target, jobId);
    const other = await FsCheckpointStorage.initializeLocationForSavepoint(target, jobId);
    expect(location).not.toBe(other);
    expect(path.basename(location)).toMatch(
      new RegExp(`^savepoint-${jobId.toString().slice(0, 6)}-[0-9a-f]{12}$`),
    );
    const storage = new FsCheckpointStorage(path.join(base, "checkpoints"), jobId);
    const attempt = new ExecutionAttemptID();
    const handle = await storage.writeTaskState(4n, attempt, "Count", "{}", undefined, location);
    expect(handle.path).toBe(path.join(location, `${attempt}.json`));
    expect(storage.holds(handle, 4n, attempt, location)).toBe(true);
    expect(storage.holds(handle, 4n, attempt)).toBe(false);
  });

  it("writes a snapshot only into a savepoint folder, and never creates one that is gone (aborted meanwhile)", async () => {
    const jobId = new JobID();
    const storage = new FsCheckpointStorage(path.join(base, "checkpoints"), jobId);
    const attempt = new ExecutionAttemptID();
    const elsewhere = path.join(base, "etc");
    await expectRejection(
      storage.writeTaskState(4n, attempt, "Count", "{}", undefined, elsewhere),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      `refused to write the snapshot of checkpoint 4 to ${elsewhere}: a snapshot goes to its checkpoint's folder or to a savepoint's folder`,
    );
    const gone = path.join(base, "savepoints", "savepoint-abcdef-0123456789ab");
    await expectRejection(
      storage.writeTaskState(4n, attempt, "Count", "{}", undefined, gone),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "cannot write the snapshot of Count of checkpoint 4",
    );
    expect(await readdir(base)).not.toContain("savepoints");
  });

  it("deletes a savepoint folder only when it is named like one, and removes a link in its place without following it", async () => {
    await expectRejection(
      FsCheckpointStorage.discardSavepoint(path.join(base, "precious")),
      CheckpointError,
      ErrorCodes.CHECKPOINT,
      "precious: it is not a savepoint folder",
    );
    const kept = path.join(base, "kept");
    await mkdir(kept);
    await writeFile(path.join(kept, "file"), "x");
    const link = path.join(base, "savepoint-abcdef-0123456789ab");
    await symlink(kept, link);
    await FsCheckpointStorage.discardSavepoint(link);
    expect(await readdir(base)).toEqual(["kept"]);
    expect(await readdir(kept)).toEqual(["file"]);
  });
});
