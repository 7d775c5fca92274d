import { ErrorCodes, type ResultPartitionID } from "@sluice/core";

/** The codes of Flink's `PartitionException` family: a consumer could not read a partition. */
const PARTITION_EXCEPTION_CODES: ReadonlySet<string> = new Set([
  ErrorCodes.PARTITION_NOT_FOUND,
  ErrorCodes.PARTITION_CONNECTION,
  "SLUICE_ERR_PARTITION_CORRUPT",
]);

/** An error of the `PartitionException` family: it names the partition that could not be read. */
export interface PartitionExceptionLike extends Error {
  readonly code: string;
  /** The partition, with its producer's execution attempt. */
  readonly partitionId: ResultPartitionID;
}

/**
 * Whether `error` (or one of its causes) says that a consumer could not read a partition (not
 * found, connection to its producer lost, corrupt data) and names it; returns that error. The
 * job side then re-runs the partition's producer (Flink finds a `PartitionException` among the
 * causes the same way).
 */
export function findPartitionException(error: unknown): PartitionExceptionLike | undefined {
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; depth++) {
    if (isPartitionException(cause)) return cause;
    cause = cause.cause;
  }
  return undefined;
}

/** Whether `error` itself is a partition error naming its partition. */
export function isPartitionException(error: unknown): error is PartitionExceptionLike {
  if (!(error instanceof Error)) return false;
  const { code, partitionId } = error as { code?: unknown; partitionId?: unknown };
  return (
    typeof code === "string" &&
    PARTITION_EXCEPTION_CODES.has(code) &&
    typeof partitionId === "object" &&
    partitionId !== null &&
    "partitionId" in partitionId &&
    "producerId" in partitionId
  );
}
