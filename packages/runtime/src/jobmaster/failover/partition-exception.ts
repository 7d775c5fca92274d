import { isPartitionException, type PartitionException } from "@sluice/core";

/**
 * The partition exception `error` is or was caused by: a consumer could not read a partition
 * (not found, connection to its producer lost, corrupt data) and names it. The job side then
 * re-runs the partition's producer; Flink looks for a `PartitionException` among the causes the
 * same way, since a task's error may wrap the read error.
 */
export function findPartitionException(error: unknown): PartitionException | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; depth++) {
    if (isPartitionException(cause)) return cause;
    cause = cause.cause;
  }
  return undefined;
}
