import {
  describePartition,
  ErrorCodes,
  isPartitionException,
  isSluiceError,
  PartitionConnectionError,
  type PartitionErrorClass,
  PartitionFileCorruptedError,
  PartitionNotFoundError,
  type ResultPartitionID,
} from "@sluice/core";

/** The classes of the PartitionException family by code. */
const PARTITION_ERROR_CLASSES: ReadonlyMap<string, PartitionErrorClass> = new Map([
  [ErrorCodes.PARTITION_NOT_FOUND, PartitionNotFoundError],
  [ErrorCodes.PARTITION_CONNECTION, PartitionConnectionError],
  [ErrorCodes.PARTITION_FILE_CORRUPTED, PartitionFileCorruptedError],
]);

/**
 * The error a consumer's channel fails with when it cannot read `partitionId`, classified as
 * Flink's PartitionException family so that the job side can tell which producer must run again:
 *
 * - a not-found, connection or corrupt-data error gets the channel's partition (the producer's
 *   data server, the transport and the file reader only know the request, the address or the
 *   file; an ErrorResponse carries no partition id);
 * - a lost connection (the producer's worker died) while reading a blocking partition becomes a
 *   PartitionConnectionError: the partition's data went with the worker and must be produced
 *   again. For a pipelined partition the producer is restarted with the consumer anyway, so the
 *   transport error stays what it is.
 *
 * Anything else is returned as it is.
 */
export function classifyPartitionFailure(
  cause: Error,
  partitionId: ResultPartitionID,
  readsBlockingPartition: boolean,
): Error {
  if (isPartitionException(cause)) return cause;
  if (!isSluiceError(cause)) return cause;
  const cls = PARTITION_ERROR_CLASSES.get(cause.code);
  if (cls !== undefined) return new cls(cause.message, { cause, partitionId });
  if (readsBlockingPartition && cause.code === ErrorCodes.REMOTE_TRANSPORT) {
    return new PartitionConnectionError(
      `lost the connection to the producer while reading blocking ${describePartition(partitionId)}: ${cause.message}`,
      { cause, partitionId },
    );
  }
  return cause;
}
