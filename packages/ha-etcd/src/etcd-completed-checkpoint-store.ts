import path from "node:path";
import { IllegalArgumentError } from "@sluice/core";
import {
  type CompletedCheckpointStore,
  HighAvailabilityStateError,
  type JsonValue,
  type StoredCompletedCheckpoint,
} from "@sluice/runtime-api";
import type { EtcdKv } from "./client/etcd-kv.js";
import type { LeadershipFence } from "./leadership-fence.js";
import type { StateFiles } from "./state-files.js";

/** Checkpoint ids in keys are zero-padded, so that etcd's key order is the id order. */
const ID_DIGITS = 20;

interface Pointer {
  readonly key: string;
  readonly file: string;
}

/**
 * The completed-checkpoint store of one job on etcd (Flink's `DefaultCompletedCheckpointStore`
 * over a state handle store): each checkpoint's record is a file under
 * `<storageDir>/<cluster-id>/checkpoints/<job id>/`, and the key
 * `checkpoints/<job id>/<zero-padded id>` holds its path. Adding a checkpoint and dropping the
 * ones beyond the retained number is one fenced transaction.
 *
 * A key that names a file outside that job's folder is refused (`SLUICE_ERR_HA_STATE`), and
 * nothing outside is read or deleted. A record's `externalPointer` (the checkpoint's `_metadata`
 * under `state.checkpoints.dir`) is kept as given, an absolute path: this store never reads or
 * deletes it; the job side that restores from it and discards subsumed checkpoints owns it.
 */
export class EtcdCompletedCheckpointStore implements CompletedCheckpointStore {
  private readonly prefix: string;
  private readonly folder: string;

  constructor(
    private readonly kv: EtcdKv,
    private readonly fence: LeadershipFence,
    private readonly files: StateFiles,
    private readonly jobId: string,
    readonly maxNumberOfRetainedCheckpoints: number,
  ) {
    this.prefix = `checkpoints/${jobId}/`;
    this.folder = `checkpoints/${jobId}`;
  }

  async addCheckpoint(
    checkpoint: StoredCompletedCheckpoint,
  ): Promise<readonly StoredCompletedCheckpoint[]> {
    const what = `adding checkpoint ${checkpoint.checkpointId} of job ${this.jobId}`;
    this.fence.leadership(what);
    if (checkpoint.checkpointId < 1n || checkpoint.checkpointId >= 10n ** BigInt(ID_DIGITS)) {
      throw new IllegalArgumentError(
        `a checkpoint id must be in [1, 10^${ID_DIGITS}), got ${checkpoint.checkpointId}`,
      );
    }
    if (!path.isAbsolute(checkpoint.externalPointer)) {
      throw new IllegalArgumentError(
        `the external pointer of checkpoint ${checkpoint.checkpointId} must be an absolute path (every job manager resolves it), got ${JSON.stringify(checkpoint.externalPointer)}`,
      );
    }
    const existing = await this.pointers();
    const latest = existing.at(-1);
    if (latest !== undefined && idOf(this.prefix, latest.key) >= checkpoint.checkpointId) {
      throw new IllegalArgumentError(
        `checkpoint ${checkpoint.checkpointId} of job ${this.jobId} is not newer than the stored checkpoint ${idOf(this.prefix, latest.key)}`,
      );
    }
    const dropped = existing.slice(
      0,
      Math.max(0, existing.length + 1 - this.maxNumberOfRetainedCheckpoints),
    );
    // Read (and so confined to this job's folder) before anything is written.
    const subsumed = await Promise.all(dropped.map((pointer) => this.readRecord(pointer)));
    const file = await this.files.write(
      this.folder,
      `completedCheckpoint-${checkpoint.checkpointId}`,
      toRecord(checkpoint),
    );
    const key = this.prefix + checkpoint.checkpointId.toString().padStart(ID_DIGITS, "0");
    try {
      await this.fence.commit(what, [
        { put: { key, value: file } },
        ...dropped.map((pointer) => ({ deleteRange: { key: pointer.key } })),
      ]);
    } catch (error) {
      await this.files.discard(file);
      throw error;
    }
    await Promise.all(
      dropped.map((pointer) => this.files.remove(pointer.key, pointer.file, this.folder)),
    );
    return subsumed;
  }

  async getLatestCheckpoint(): Promise<StoredCompletedCheckpoint | undefined> {
    const latest = (await this.pointers()).at(-1);
    return latest === undefined ? undefined : this.readRecord(latest);
  }

  async getAllCheckpoints(): Promise<readonly StoredCompletedCheckpoint[]> {
    return Promise.all((await this.pointers()).map((pointer) => this.readRecord(pointer)));
  }

  async shutdown(discard: boolean): Promise<void> {
    if (!discard) return;
    await this.fence.commit(`discarding the checkpoints of job ${this.jobId}`, [
      { deleteRange: { key: this.prefix, prefix: true } },
    ]);
    await this.files.removeFolder(this.folder);
  }

  /** Every pointer of this job, oldest first. */
  private async pointers(): Promise<Pointer[]> {
    const { kvs } = await this.kv.range(`listing the checkpoints of job ${this.jobId}`, {
      key: this.prefix,
      prefix: true,
      sort: { target: "KEY", order: "ASCEND" },
    });
    return kvs
      .map((kv) => ({ key: kv.key, file: kv.value }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private async readRecord(pointer: Pointer): Promise<StoredCompletedCheckpoint> {
    const record = await this.files.read(pointer.key, pointer.file, this.folder);
    const checkpoint = fromRecord(record);
    if (checkpoint === undefined || checkpoint.checkpointId !== idOf(this.prefix, pointer.key)) {
      throw new HighAvailabilityStateError(
        `etcd key ${pointer.key} points to ${pointer.file}, which holds no record of that checkpoint`,
      );
    }
    return checkpoint;
  }
}

function idOf(prefix: string, key: string): bigint {
  const id = key.slice(prefix.length);
  if (!/^\d{1,20}$/.test(id)) {
    throw new HighAvailabilityStateError(`etcd key ${key} is not a checkpoint's key`);
  }
  return BigInt(id);
}

function toRecord(checkpoint: StoredCompletedCheckpoint): JsonValue {
  return {
    checkpointId: checkpoint.checkpointId.toString(),
    timestamp: checkpoint.timestamp,
    externalPointer: checkpoint.externalPointer,
    ...(checkpoint.details === undefined ? {} : { details: checkpoint.details }),
  };
}

function fromRecord(record: JsonValue): StoredCompletedCheckpoint | undefined {
  if (typeof record !== "object" || record === null || Array.isArray(record)) return undefined;
  const { checkpointId, timestamp, externalPointer, details } = record;
  if (
    typeof checkpointId !== "string" ||
    !/^\d+$/.test(checkpointId) ||
    typeof timestamp !== "number" ||
    typeof externalPointer !== "string"
  ) {
    return undefined;
  }
  return {
    checkpointId: BigInt(checkpointId),
    timestamp,
    externalPointer,
    ...(details === undefined ? {} : { details }),
  };
}
