import { randomBytes } from "node:crypto";
import { lstat, mkdir, readFile, realpath, rename, rm, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ExecutionAttemptID, JobID } from "@sluice/core";
import {
  CheckpointingOptions,
  type JsonObject,
  type JsonValue,
  type ReadableConfig,
} from "@sluice/runtime-api";
import type { FileStateHandle } from "../messages/file-state-handle.js";
import { writeFileAtomically } from "../util/write-file-atomically.js";
import { ChannelStateSerializer } from "./channel-state-serializer.js";
import {
  CHECKED_FILE_VERSION,
  checksumOf,
  frameCheckedFile,
  unframeCheckedFile,
} from "./checked-file.js";
import { CheckpointError } from "./checkpoint-error.js";
import {
  channelStateSize,
  EMPTY_CHANNEL_STATE,
  type TaskChannelState,
} from "./task-channel-state.js";

/** What a restored task checks its snapshot file against. */
export interface TaskStateIdentity {
  readonly jobId: JobID;
  readonly checkpointId: bigint;
  /** The task's name, for messages. */
  readonly taskName: string;
}

/** What a task's snapshot file holds: its state and, for an unaligned checkpoint, channel state. */
export interface TaskSnapshot {
  /** What the task's CheckpointHandler returned (undefined: nothing). */
  readonly state: JsonValue | undefined;
  /** The in-flight data to replay (empty for an aligned checkpoint). */
  readonly channelState: TaskChannelState;
}

/** The suffix of a task's channel state file, next to its `<attempt>.json`. */
const CHANNEL_STATE_SUFFIX = ".channel-state";
/** A checkpoint folder renamed for deletion: `chk-<n>.discarded-<random>`. */
const DISCARDED_SUFFIX = ".discarded-";

/** The version of the snapshot and `_metadata` files this build writes and reads. */
const FILE_VERSION = CHECKED_FILE_VERSION;

/** The name of a checkpoint's metadata file (Flink's). */
export const METADATA_FILE_NAME = "_metadata";

/** The folder used when `state.checkpoints.dir` is unset. */
const DEFAULT_FOLDER_NAME = "sluice-checkpoints";

/**
 * The name of a savepoint's own folder (Flink's): `savepoint-<first 6 hex digits of the job
 * id>-<12 random hex digits>`. A task writes its snapshot only into a folder named so.
 */
const SAVEPOINT_FOLDER = /^savepoint-[0-9a-f]{6}-[0-9a-f]{12}$/;

/**
 * The files of one job's checkpoints under `state.checkpoints.dir` (Flink's
 * FsCheckpointStorageAccess): checkpoint `n` is the folder `<dir>/<jobId>/chk-<n>/` with one
 * snapshot file per task (`<execution attempt>.json`, written by the worker that runs the task)
 * and `_metadata` (written by the job side once every task acknowledged). Every file is written
 * to a temporary name, flushed to disk and renamed, so a reader never sees a partial file and a
 * crash leaves either the whole file or none.
 *
 * A snapshot file holds the task's state as JSON inside an envelope naming the job, the
 * checkpoint and the task; a restore checks the envelope, so a handle pointing at another
 * checkpoint's file fails loudly instead of restoring the wrong state. Snapshot and `_metadata`
 * files carry their length and a CRC-32 in a header line
 * (`SLUICE-CHECKPOINT <version> <length> <crc32>`), checked before anything is parsed. The in-flight data of an unaligned checkpoint goes to
 * `<execution attempt>.channel-state` next to it (layout: `ChannelStateSerializer`),
 * written first; the envelope records its size and CRC-32.
 *
 * The storage owns only the files it names. A task's snapshot has one path, fixed by the job, the
 * checkpoint and the task's execution attempt ({@link taskStateFile}); the job side accepts an
 * acknowledgement only when it names exactly that path, so it never deletes a file it did not
 * name. Deleting resolves `state.checkpoints.dir` to its real path once (the operator may point
 * it anywhere) and follows no symbolic link below it: a job or checkpoint folder that is a link
 * is refused with a CheckpointError, and a link in a file's place is removed itself, never what
 * it points to.
 */
export class FsCheckpointStorage {
  /** `<state.checkpoints.dir>/<jobId>`. */
  readonly jobDirectory: string;
  private readonly baseDirectory: string;
  private readonly jobId: JobID;

  constructor(baseDirectory: string, jobId: JobID) {
    this.jobId = jobId;
    this.baseDirectory = path.resolve(baseDirectory);
    this.jobDirectory = path.join(this.baseDirectory, jobId.toString());
  }

  /**
   * Creates the folder of a new savepoint of job `jobId` in `targetDirectory` (Flink's
   * `initializeLocationForSavepoint`): `<targetDirectory>/savepoint-<first 6 hex digits of the
   * job id>-<12 random hex digits>`, a fresh folder (an existing one is never reused). Returns
   * its absolute path.
   *
   * @throws CheckpointError naming the folder when it cannot be created.
   */
  static async initializeLocationForSavepoint(
    targetDirectory: string,
    jobId: JobID,
  ): Promise<string> {
    const prefix = `savepoint-${jobId.toString().slice(0, 6)}-`;
    for (let attempt = 0; ; attempt++) {
      const folder = path.resolve(targetDirectory, prefix + randomBytes(6).toString("hex"));
      try {
        await mkdir(path.dirname(folder), { recursive: true });
        await mkdir(folder);
        return folder;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EEXIST" && attempt < 10) continue;
        throw new CheckpointError(
          `cannot create the savepoint folder ${folder} of job ${jobId}: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
  }

  /**
   * Whether `location` may be written to as a savepoint's folder: an absolute path whose last
   * component is a savepoint folder's name. Barriers carry the folder to every task; a task
   * writes nothing anywhere else.
   */
  static isSavepointLocation(location: string): boolean {
    return path.isAbsolute(location) && SAVEPOINT_FOLDER.test(path.basename(location));
  }

  /**
   * Deletes the folder of a savepoint that did not complete (aborted, or its `_metadata` could
   * not be written). Only a folder named like a savepoint's is deleted, and a symbolic link in
   * its place is removed itself, never what it points to.
   *
   * @throws CheckpointError when `location` is not a savepoint folder.
   */
  static async discardSavepoint(location: string): Promise<void> {
    if (!FsCheckpointStorage.isSavepointLocation(location)) {
      throw new CheckpointError(`refused to delete ${location}: it is not a savepoint folder`);
    }
    let isFolder: boolean;
    try {
      isFolder = (await lstat(location)).isDirectory();
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    if (!isFolder) {
      await rm(location, { force: true });
      return;
    }
    const discarded = `${location}${DISCARDED_SUFFIX}${randomBytes(4).toString("hex")}`;
    try {
      await rename(location, discarded);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    await rm(discarded, { recursive: true, force: true });
  }

  /** `state.checkpoints.dir`, or `sluice-checkpoints` in the system's temporary folder. */
  static baseDirectoryOf(configuration: ReadableConfig): string {
    const configured = configuration.getOptional(CheckpointingOptions.CHECKPOINTS_DIRECTORY);
    return path.resolve(configured ?? path.join(tmpdir(), DEFAULT_FOLDER_NAME));
  }

  /** The folder of checkpoint `checkpointId`. */
  checkpointDirectory(checkpointId: bigint): string {
    return path.join(this.jobDirectory, `chk-${checkpointId}`);
  }

  /**
   * The one path of the snapshot of attempt `executionAttemptId` in checkpoint `checkpointId`:
   * `<jobDirectory>/chk-<n>/<attempt>.json`, or `<location>/<attempt>.json` for a savepoint
   * whose folder is `location`.
   */
  taskStateFile(
    checkpointId: bigint,
    executionAttemptId: ExecutionAttemptID,
    location?: string,
  ): string {
    const folder = location ?? this.checkpointDirectory(checkpointId);
    return path.join(folder, `${executionAttemptId}.json`);
  }

  /**
   * True when `handle` names the snapshot file of attempt `executionAttemptId` in checkpoint
   * `checkpointId` of this job ({@link taskStateFile}), and nothing else. The job side deletes
   * the files named in acknowledgements, which come from other processes: a handle naming
   * another task's snapshot, another checkpoint's or any other file is not the task's.
   */
  holds(
    handle: FileStateHandle,
    checkpointId: bigint,
    executionAttemptId: ExecutionAttemptID,
    location?: string,
  ): boolean {
    return (
      path.resolve(handle.path) === this.taskStateFile(checkpointId, executionAttemptId, location)
    );
  }

  /**
   * Writes one task's snapshot of `checkpointId` atomically.
   *
   * @param stateJson the task's state, already serialized (the snapshot was taken synchronously);
   *   undefined when the task stores none.
   * @param channelState the in-flight data of an unaligned checkpoint, written to a channel
   *   state file next to the snapshot when it holds any.
   * @param location a savepoint's folder (the barrier's target location); absent: the
   *   checkpoint's folder.
   * @throws CheckpointError naming the file when it cannot be written, or when `location` is not
   *   a savepoint folder.
   */
  async writeTaskState(
    checkpointId: bigint,
    executionAttemptId: ExecutionAttemptID,
    taskName: string,
    stateJson: string | undefined,
    channelState: TaskChannelState = EMPTY_CHANNEL_STATE,
    location?: string,
  ): Promise<FileStateHandle> {
    if (location !== undefined && !FsCheckpointStorage.isSavepointLocation(location)) {
      throw new CheckpointError(
        `${taskName}: refused to write the snapshot of checkpoint ${checkpointId} to ${location}: a snapshot goes to its checkpoint's folder or to a savepoint's folder (savepoint-<job>-<random>)`,
      );
    }
    const file = this.taskStateFile(checkpointId, executionAttemptId, location);
    let channelStateField = "";
    if (channelStateSize(channelState) > 0) {
      const bytes = ChannelStateSerializer.serialize(channelState);
      await this.writeAtomically(
        channelStateFileOf(file),
        bytes,
        `the channel state of ${taskName}`,
        checkpointId,
      );
      channelStateField = `,"channelState":{"size":${bytes.length},"crc32":"${checksumOf(bytes)}"}`;
    }
    const stateField = stateJson === undefined ? "" : `,"state":${stateJson}`;
    const envelope =
      `{"version":${FILE_VERSION},"jobId":${JSON.stringify(this.jobId.toString())},` +
      `"checkpointId":"${checkpointId}","task":${JSON.stringify(taskName)}${stateField}${channelStateField}}`;
    const framed = frameCheckedFile(envelope);
    await this.writeAtomically(file, framed, `the snapshot of ${taskName}`, checkpointId);
    return { path: file, size: framed.length };
  }

  /**
   * Writes the `_metadata` file of a completed checkpoint atomically (into `location` for a
   * savepoint); returns its path.
   *
   * @throws CheckpointError naming the file when it cannot be written.
   */
  async writeMetadata(
    checkpointId: bigint,
    metadata: JsonObject,
    location?: string,
  ): Promise<string> {
    const folder = location ?? this.checkpointDirectory(checkpointId);
    const file = path.join(folder, METADATA_FILE_NAME);
    const text = JSON.stringify({
      version: FILE_VERSION,
      jobId: this.jobId.toString(),
      checkpointId: checkpointId.toString(),
      ...metadata,
    });
    await this.writeAtomically(file, frameCheckedFile(text), "the metadata", checkpointId);
    return file;
  }

  /**
   * Reads a checkpoint's `_metadata` back, once its length and checksum matched.
   *
   * @throws CheckpointError naming the file when it is missing, unreadable or damaged.
   */
  static async readMetadata(file: string): Promise<JsonObject> {
    const what = `the metadata ${file}`;
    const metadata = parseCheckedJson(await readCheckpointFile(file, what), what);
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
      throw new CheckpointError(`${what} is not a JSON object`);
    }
    return metadata as JsonObject;
  }

  /**
   * Reads a task's snapshot back and checks that it belongs to `expected`'s job and checkpoint.
   * Returns the state the task stored.
   *
   * @throws CheckpointError naming the file when it is missing, unreadable, not a snapshot, or
   *   of another job or checkpoint.
   */
  static async readTaskState(
    handle: FileStateHandle,
    expected: TaskStateIdentity,
  ): Promise<JsonValue> {
    return (await FsCheckpointStorage.readTaskSnapshot(handle, expected)).state as JsonValue;
  }

  /**
   * Reads a task's snapshot back with its channel state, checking that it belongs to
   * `expected`'s job and checkpoint.
   *
   * @throws CheckpointError naming the file when the snapshot or its channel state file is
   *   missing, unreadable, malformed, or of another job or checkpoint.
   */
  static async readTaskSnapshot(
    handle: FileStateHandle,
    expected: TaskStateIdentity,
  ): Promise<TaskSnapshot> {
    const what = `${expected.taskName}: the snapshot ${handle.path} of checkpoint ${expected.checkpointId}`;
    const bytes = await readCheckpointFile(handle.path, what);
    if (bytes.length !== handle.size) {
      throw new CheckpointError(
        `${what} is damaged: it has ${bytes.length} bytes, but its checkpoint recorded ${handle.size}`,
      );
    }
    const envelope = parseCheckedJson(bytes, what);
    const fields = envelope as Record<string, unknown>;
    if (typeof envelope !== "object" || envelope === null || fields.version !== FILE_VERSION) {
      throw new CheckpointError(
        `${what} is not a snapshot file of version ${FILE_VERSION} (found version ${JSON.stringify(fields?.version)})`,
      );
    }
    if (
      fields.jobId !== expected.jobId.toString() ||
      fields.checkpointId !== expected.checkpointId.toString()
    ) {
      throw new CheckpointError(
        `${what} belongs to job ${String(fields.jobId)}, checkpoint ${String(fields.checkpointId)}`,
      );
    }
    const state = fields.state as JsonValue | undefined;
    const channelStateField = fields.channelState as
      | { size?: unknown; crc32?: unknown }
      | undefined;
    if (channelStateField === undefined) return { state, channelState: EMPTY_CHANNEL_STATE };
    // The channel state file is always the snapshot's sibling: the snapshot names only its size,
    // so it cannot send a restore to read anything else.
    const channelPath = channelStateFileOf(handle.path);
    const channelWhat = `${expected.taskName}: the channel state ${channelPath} of checkpoint ${expected.checkpointId}`;
    const expectedSize = channelStateField.size;
    if (typeof expectedSize !== "number" || !Number.isInteger(expectedSize) || expectedSize < 0) {
      throw new CheckpointError(`${what} records no valid channel state size`);
    }
    const channelBytes = await readCheckpointFile(channelPath, channelWhat);
    if (channelBytes.length !== expectedSize) {
      throw new CheckpointError(
        `${channelWhat} has ${channelBytes.length} bytes, but the snapshot recorded ${expectedSize}`,
      );
    }
    const checksum = checksumOf(channelBytes);
    if (checksum !== channelStateField.crc32) {
      throw new CheckpointError(
        `${channelWhat} is damaged: the CRC-32 of its ${channelBytes.length} bytes is ${checksum}, but the snapshot recorded ${String(channelStateField.crc32)}`,
      );
    }
    return {
      state,
      channelState: ChannelStateSerializer.deserialize(channelBytes, channelWhat),
    };
  }

  /**
   * Deletes one snapshot file of a checkpoint that will never complete (a late acknowledgement,
   * a failed task's snapshot), then — unless `pruneFolders` is false because the checkpoint
   * may still complete — its checkpoint's and job's folders if they are left empty. A snapshot
   * in a savepoint's folder is deleted alone. Missing files are fine.
   *
   * @throws CheckpointError when `handle` is not a snapshot file directly in one of this job's
   *   checkpoint folders, or when that folder or the job's is a symbolic link (nothing is
   *   deleted then).
   */
  async discardState(handle: FileStateHandle, pruneFolders = true): Promise<void> {
    const file = path.resolve(handle.path);
    if (
      FsCheckpointStorage.isSavepointLocation(path.dirname(file)) &&
      path.basename(file).endsWith(".json")
    ) {
      // A savepoint's snapshot: its folder goes with the savepoint when it is aborted.
      await rm(file, { force: true });
      await rm(channelStateFileOf(file), { force: true });
      return;
    }
    const checkpointFolder = path.basename(path.dirname(file));
    const name = path.basename(file);
    if (
      path.dirname(path.dirname(file)) !== this.jobDirectory ||
      !/^chk-\d+$/.test(checkpointFolder) ||
      !name.endsWith(".json")
    ) {
      throw new CheckpointError(
        `refused to delete ${handle.path}: it is not a snapshot file of a checkpoint folder under ${this.jobDirectory}`,
      );
    }
    const folder = await this.realFolder(checkpointFolder);
    if (folder === undefined) return;
    await rm(path.join(folder, name), { force: true });
    await rm(channelStateFileOf(path.join(folder, name)), { force: true });
    if (!pruneFolders) return;
    if (await removeIfEmpty(folder)) await removeIfEmpty(path.dirname(folder));
  }

  /**
   * Deletes the folder of checkpoint `checkpointId` with everything in it (a symbolic link in it
   * is removed, not followed), and the job's folder once it is empty.
   *
   * A task manager may still be writing its snapshot into the folder of a checkpoint the job side
   * aborted. The folder is therefore first renamed out of the way (one atomic step): a write
   * that had not created its file yet can no longer reach it (it fails, or it creates a fresh
   * `chk-<n>` whose snapshot the late acknowledgement then discards), so nothing is added while
   * the renamed folder is deleted. A recursive delete in place would fail with ENOTEMPTY when a
   * file appeared between its listing and its final rmdir.
   *
   * @throws CheckpointError when the checkpoint's or the job's folder is a symbolic link (nothing
   *   is deleted then).
   */
  async discardCheckpoint(checkpointId: bigint): Promise<void> {
    const folder = await this.realFolder(`chk-${checkpointId}`);
    if (folder === undefined) return;
    const discarded = `${folder}${DISCARDED_SUFFIX}${randomBytes(4).toString("hex")}`;
    try {
      await rename(folder, discarded);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
      throw error;
    }
    await rm(discarded, { recursive: true, force: true });
    await removeIfEmpty(path.dirname(folder));
  }

  /**
   * The real path of `<jobDirectory>/<checkpointFolder>`, or undefined when it does not exist.
   * `state.checkpoints.dir` is resolved (the operator chose it); the job's folder and the
   * checkpoint's folder must be real folders, so that no link below it leads a deletion
   * elsewhere.
   *
   * @throws CheckpointError naming the link when either is not a real folder.
   */
  private async realFolder(checkpointFolder: string): Promise<string | undefined> {
    let current: string;
    try {
      current = await realpath(this.baseDirectory);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    for (const component of [this.jobId.toString(), checkpointFolder]) {
      current = path.join(current, component);
      let isFolder: boolean;
      try {
        isFolder = (await lstat(current)).isDirectory();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
      if (!isFolder) {
        throw new CheckpointError(
          `refused to delete in ${current}: it is a symbolic link or not a folder, and the checkpoint storage deletes only in the folders it creates under state.checkpoints.dir (${this.baseDirectory})`,
        );
      }
    }
    return current;
  }

  /**
   * Writes `file` atomically. Its folder is created unless it is a savepoint's, which the job
   * side created: a savepoint aborted meanwhile (its folder deleted) must not come back.
   */
  private async writeAtomically(
    file: string,
    text: string | Buffer,
    what: string,
    checkpointId: bigint,
  ): Promise<void> {
    try {
      if (!FsCheckpointStorage.isSavepointLocation(path.dirname(file))) {
        await mkdir(path.dirname(file), { recursive: true });
      }
      await writeFileAtomically(file, text);
    } catch (error) {
      throw new CheckpointError(
        `cannot write ${what} of checkpoint ${checkpointId} to ${file}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
}

/** The bytes of checkpoint file `file`; `what` names it in the error. */
async function readCheckpointFile(file: string, what: string): Promise<Buffer> {
  try {
    return await readFile(file);
  } catch (error) {
    throw new CheckpointError(`${what} cannot be read: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The JSON body of a framed checkpoint file, once its length and checksum matched. */
function parseCheckedJson(bytes: Buffer, what: string): unknown {
  const text = unframeCheckedFile(bytes, what);
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new CheckpointError(`${what} is not JSON: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The channel state file next to snapshot file `snapshotPath` (`<attempt>.channel-state`). */
function channelStateFileOf(snapshotPath: string): string {
  const base = snapshotPath.endsWith(".json")
    ? snapshotPath.slice(0, -".json".length)
    : snapshotPath;
  return base + CHANNEL_STATE_SUFFIX;
}

/** Removes `directory` if it is empty; true when it is gone afterwards. */
async function removeIfEmpty(directory: string): Promise<boolean> {
  try {
    await rmdir(directory);
    return true;
  } catch (error) {
    // Not empty (other files or checkpoints remain) or already gone: nothing else to do.
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return true;
    if (code === "ENOTEMPTY" || code === "EEXIST") return false;
    throw error;
  }
}
