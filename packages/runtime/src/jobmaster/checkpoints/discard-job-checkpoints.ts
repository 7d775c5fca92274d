import { readdir } from "node:fs/promises";
import type { JobID } from "@sluice/core";
import { FsCheckpointStorage } from "../../checkpointing/fs-checkpoint-storage.js";

/** A checkpoint's folder name, `chk-<id>`. */
const CHECKPOINT_FOLDER = /^chk-(\d+)$/;

/**
 * Deletes the checkpoint folders of job `jobId` under `state.checkpoints.dir` (`baseDirectory`)
 * except those of the checkpoints `keep` names, then the job's folder once it is empty: what the
 * cleanup of a job that ended for good does after its result is stored (Flink's
 * `CheckpointsCleaner` at `CompletedCheckpointStore.shutdown`). Every `chk-<id>` folder goes,
 * also those no store named (a job manager that lost its leadership left its pending ones), and
 * only through {@link FsCheckpointStorage.discardCheckpoint}, which follows no link and touches
 * nothing outside the job's folder. Resolves with the ids it deleted.
 *
 * @throws CheckpointError when the job's folder or a checkpoint's is a symbolic link.
 */
export async function discardJobCheckpoints(
  baseDirectory: string,
  jobId: JobID,
  keep: ReadonlySet<bigint> = new Set(),
): Promise<readonly bigint[]> {
  const storage = new FsCheckpointStorage(baseDirectory, jobId);
  let entries: string[];
  try {
    entries = await readdir(storage.jobDirectory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const deleted: bigint[] = [];
  for (const entry of entries) {
    const match = CHECKPOINT_FOLDER.exec(entry);
    if (match === null) continue;
    const id = BigInt(match[1] as string);
    if (keep.has(id)) continue;
    await storage.discardCheckpoint(id);
    deleted.push(id);
  }
  return deleted.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
