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
