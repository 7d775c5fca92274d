import { mkdir, readFile, rm, rmdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import type { ExecutionAttemptID, JobID } from "@sluice/core";
import {
  CheckpointingOptions,
  type JsonObject,
  type JsonValue,
  type ReadableConfig,
} from "@sluice/runtime-api";
import writeFileAtomic from "write-file-atomic";
import { CheckpointError } from "./checkpoint-error.js";

/**
 * Where one task's snapshot of one checkpoint is stored (Flink's FileStateHandle): an absolute
 * path under `state.checkpoints.dir` and the file's size. It travels in the task's
 * acknowledgement to the job side and, on a restore, in the task's deployment descriptor.
 */
export interface FileStateHandle {
  /** Absolute path of the snapshot file. */
  readonly path: string;
  /** The file's size in bytes. */
  readonly size: number;
}

/** What a restored task checks its snapshot file against. */
export interface TaskStateIdentity {
  readonly jobId: JobID;
  readonly checkpointId: bigint;
  /** The task's name, for messages. */
  readonly taskName: string;
}

/** The version of the snapshot and `_metadata` files this build writes and reads. */
const FILE_VERSION = 1;

/** The name of a checkpoint's metadata file (Flink's). */
export const METADATA_FILE_NAME = "_metadata";

/** The folder used when `state.checkpoints.dir` is unset. */
const DEFAULT_FOLDER_NAME = "sluice-checkpoints";

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
 * checkpoint's file fails loudly instead of restoring the wrong state.
 */
export class FsCheckpointStorage {
  /** `<state.checkpoints.dir>/<jobId>`. */
  readonly jobDirectory: string;
  private readonly jobId: JobID;

  constructor(baseDirectory: string, jobId: JobID) {
    this.jobId = jobId;
    this.jobDirectory = path.resolve(baseDirectory, jobId.toString());
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
   * True when `handle` names a task's snapshot file of checkpoint `checkpointId` of this job:
   * directly in its folder, and not its `_metadata`. The job side deletes the files named in
   * acknowledgements, which may come from another process: it must never delete anything else.
   */
  holds(handle: FileStateHandle, checkpointId: bigint): boolean {
    const file = path.resolve(handle.path);
    return (
      path.dirname(file) === this.checkpointDirectory(checkpointId) &&
      path.basename(file) !== METADATA_FILE_NAME
    );
  }

  /**
   * Writes one task's snapshot of `checkpointId` atomically.
   *
   * @param stateJson the task's state, already serialized (the snapshot was taken synchronously).
   * @throws CheckpointError naming the file when it cannot be written.
   */
  async writeTaskState(
    checkpointId: bigint,
    executionAttemptId: ExecutionAttemptID,
    taskName: string,
    stateJson: string,
  ): Promise<FileStateHandle> {
    const envelope =
      `{"version":${FILE_VERSION},"jobId":${JSON.stringify(this.jobId.toString())},` +
      `"checkpointId":"${checkpointId}","task":${JSON.stringify(taskName)},"state":${stateJson}}`;
    const file = path.join(this.checkpointDirectory(checkpointId), `${executionAttemptId}.json`);
    await this.writeAtomically(file, envelope, `the snapshot of ${taskName}`, checkpointId);
    return { path: file, size: Buffer.byteLength(envelope) };
  }

  /**
   * Writes the `_metadata` file of a completed checkpoint atomically; returns its path.
   *
   * @throws CheckpointError naming the file when it cannot be written.
   */
  async writeMetadata(checkpointId: bigint, metadata: JsonObject): Promise<string> {
    const file = path.join(this.checkpointDirectory(checkpointId), METADATA_FILE_NAME);
    const text = JSON.stringify({
      version: FILE_VERSION,
      jobId: this.jobId.toString(),
      checkpointId: checkpointId.toString(),
      ...metadata,
    });
    await this.writeAtomically(file, text, "the metadata", checkpointId);
    return file;
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
    const what = `${expected.taskName}: the snapshot ${handle.path} of checkpoint ${expected.checkpointId}`;
    let text: string;
    try {
      text = await readFile(handle.path, "utf8");
    } catch (error) {
      throw new CheckpointError(`${what} cannot be read: ${(error as Error).message}`, {
        cause: error,
      });
    }
    let envelope: unknown;
    try {
      envelope = JSON.parse(text);
    } catch (error) {
      throw new CheckpointError(`${what} is not JSON: ${(error as Error).message}`, {
        cause: error,
      });
    }
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
    return fields.state as JsonValue;
  }

  /**
   * Deletes one snapshot file of a checkpoint that will never complete (a late acknowledgement,
   * a failed task's snapshot), then — unless `pruneFolders` is false because the checkpoint
   * may still complete — its checkpoint's and job's folders if they are left empty. Missing
   * files are fine.
   */
  async discardState(handle: FileStateHandle, pruneFolders = true): Promise<void> {
    await rm(handle.path, { force: true });
    if (!pruneFolders) return;
    const checkpointDirectory = path.dirname(handle.path);
    if (await removeIfEmpty(checkpointDirectory))
      await removeIfEmpty(path.dirname(checkpointDirectory));
  }

  /**
   * Deletes the folder of checkpoint `checkpointId` with everything in it, and the job's folder
   * once it is empty.
   */
  async discardCheckpoint(checkpointId: bigint): Promise<void> {
    await rm(this.checkpointDirectory(checkpointId), { recursive: true, force: true });
    await removeIfEmpty(this.jobDirectory);
  }

  private async writeAtomically(
    file: string,
    text: string,
    what: string,
    checkpointId: bigint,
  ): Promise<void> {
    try {
      await mkdir(path.dirname(file), { recursive: true });
      // Written to a temporary name, fsynced and renamed; the temporary file is removed on error.
      await writeFileAtomic(file, text, { fsync: true });
    } catch (error) {
      throw new CheckpointError(
        `cannot write ${what} of checkpoint ${checkpointId} to ${file}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }
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
