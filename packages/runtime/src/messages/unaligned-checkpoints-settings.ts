/** How a job's exactly-once checkpoints may be unaligned (`execution.checkpointing.unaligned.*`). */
export interface UnalignedCheckpointsSettings {
  /**
   * `execution.checkpointing.aligned-checkpoint-timeout` in ms: 0 makes every checkpoint
   * unaligned from the start; more makes a source's barrier a timeoutable aligned one that
   * turns unaligned at a task whose alignment takes longer.
   */
  readonly alignedCheckpointTimeoutMs: number;
}
