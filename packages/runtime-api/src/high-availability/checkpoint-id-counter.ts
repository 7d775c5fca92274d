/**
 * The checkpoint ids of one job (Flink's `CheckpointIDCounter`), shared by every leader so that a
 * new leader never reuses an id. Ids start at 1. Writes are fenced: only the current leader's
 * succeed.
 */
export interface CheckpointIDCounter {
  /**
   * Returns the next id and advances the counter (atomically, in the coordination service).
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   */
  getAndIncrement(): Promise<bigint>;
  /** The id {@link getAndIncrement} would return next. */
  get(): Promise<bigint>;
  /**
   * Sets the next id (after a restore from a checkpoint taken by another cluster).
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   */
  setCount(next: bigint): Promise<void>;
  /**
   * The job ended: when `discard` (globally terminal), removes the counter.
   *
   * @throws FencingTokenError when discarding and this job manager is not the current leader.
   */
  shutdown(discard: boolean): Promise<void>;
}
