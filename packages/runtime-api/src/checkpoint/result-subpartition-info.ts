/**
 * Identifies one subpartition a task produces (Flink's ResultSubpartitionInfo): the partition,
 * as its position among the task's writers (the order of the descriptors given to
 * `createResultPartitionWriters`), and the subpartition's index within it.
 */
export interface ResultSubpartitionInfo {
  /** Position of the partition among the task's result partition writers. */
  readonly partitionIndex: number;
  /** Index of the subpartition, in `[0, numberOfSubpartitions)`. */
  readonly subpartitionIndex: number;
}
