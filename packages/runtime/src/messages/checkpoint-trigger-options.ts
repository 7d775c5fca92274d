import { SnapshotType } from "@sluice/core";

/**
 * What kind of snapshot a checkpoint trigger starts and where it goes: the part of Flink's
 * `CheckpointOptions` the job side decides (the task adds the alignment). The barriers the
 * triggered task sends carry both, so every task of the checkpoint writes its snapshot to the
 * same place and knows whether it takes part in a stop-with-savepoint.
 */
export interface CheckpointTriggerOptions {
  /**
   * `CHECKPOINT`; `SAVEPOINT` (taken on request, kept until the user deletes it);
   * `SAVEPOINT_SUSPEND` and `SAVEPOINT_TERMINATE`, the synchronous savepoints of a
   * stop-with-savepoint without and with drain: a source stops, its tasks end their data
   * (`EndOfData(NO_DRAIN)` / `EndOfData(DRAIN)`), and every task finishes once the savepoint
   * completed.
   */
  readonly snapshotType: SnapshotType;
  /**
   * The folder the snapshots go to, for a savepoint: its own `savepoint-…` folder. Absent: the
   * checkpoint's folder under `state.checkpoints.dir`.
   */
  readonly targetLocation?: string;
}

/** The options of a periodic checkpoint. */
export const CHECKPOINT_TRIGGER: CheckpointTriggerOptions = Object.freeze({
  snapshotType: SnapshotType.CHECKPOINT,
});

/** Whether `type` is a savepoint (taken on request, synchronous or not). */
export function isSavepoint(type: SnapshotType): boolean {
  return (
    type === SnapshotType.SAVEPOINT ||
    type === SnapshotType.SAVEPOINT_SUSPEND ||
    type === SnapshotType.SAVEPOINT_TERMINATE
  );
}

/**
 * Whether `type` is the synchronous savepoint of a stop-with-savepoint (Flink's
 * `SavepointType.isSynchronous`): the job ends once it completed.
 */
export function isSynchronousSavepoint(type: SnapshotType): boolean {
  return type === SnapshotType.SAVEPOINT_SUSPEND || type === SnapshotType.SAVEPOINT_TERMINATE;
}

/** The names of the snapshot types, as they travel on the control plane and in `_metadata`. */
export const SNAPSHOT_TYPE_NAMES = [
  "CHECKPOINT",
  "SAVEPOINT",
  "SAVEPOINT_SUSPEND",
  "SAVEPOINT_TERMINATE",
  "FULL_CHECKPOINT",
] as const;

/** A snapshot type's name. */
export type SnapshotTypeName = (typeof SNAPSHOT_TYPE_NAMES)[number];

/** The name of `type` (`SAVEPOINT_SUSPEND`). */
export function snapshotTypeName(type: SnapshotType): SnapshotTypeName {
  return SnapshotType[type] as SnapshotTypeName;
}

/** The snapshot type named `name`, or `undefined` for an unknown name. */
export function snapshotTypeOf(name: string): SnapshotType | undefined {
  return (SNAPSHOT_TYPE_NAMES as readonly string[]).includes(name)
    ? SnapshotType[name as SnapshotTypeName]
    : undefined;
}

/** A trigger's options as they travel between processes and threads: both fields optional. */
export interface CheckpointTriggerOptionsJSON {
  readonly snapshotType?: SnapshotTypeName;
  readonly targetLocation?: string;
}

/**
 * The one encoding of a trigger's options on the control plane and to slot threads: a plain
 * checkpoint's trigger carries neither field, as before savepoints existed.
 */
export const CheckpointTriggerOptionsCodec = {
  toJSON(options: CheckpointTriggerOptions | undefined): CheckpointTriggerOptionsJSON {
    return {
      ...(options === undefined ? {} : { snapshotType: snapshotTypeName(options.snapshotType) }),
      ...(options?.targetLocation === undefined ? {} : { targetLocation: options.targetLocation }),
    };
  },
  /** `undefined` when the JSON names no (known) snapshot type: a periodic checkpoint. */
  fromJSON(json: {
    readonly snapshotType?: string | undefined;
    readonly targetLocation?: string | undefined;
  }): CheckpointTriggerOptions | undefined {
    const type = json.snapshotType === undefined ? undefined : snapshotTypeOf(json.snapshotType);
    if (type === undefined) return undefined;
    return {
      snapshotType: type,
      ...(json.targetLocation === undefined ? {} : { targetLocation: json.targetLocation }),
    };
  },
};
