/**
 * Flink's PartitionException family: a consumer could not read a result partition. When such an
 * error names the partition it is about (`partitionId`, whose `producerId` is the producing
 * execution attempt), the job side knows which producer must run again to make the data
 * available, instead of failing the job.
 */

import { registerCoreErrorClass } from "./core-error-classes.js";
import {
  defineError,
  type ErrorCode,
  ErrorCodes,
  isSluiceError,
  type SluiceError,
  type SluiceErrorOptions,
} from "./errors.js";
import type { ResultPartitionID } from "./ids/ids.js";

/** Options of the errors of the PartitionException family. */
export interface PartitionErrorOptions extends SluiceErrorOptions {
  /**
   * The partition the error is about. When given, the error is a partition exception
   * ({@link isPartitionException}) and its message names the partition and its producer.
   */
  partitionId?: ResultPartitionID;
}

/** An error of the PartitionException family; `partitionId` is set when the partition is known. */
export interface PartitionErrorInstance extends SluiceError {
  /** The partition that could not be read (its `producerId` is the producer's attempt). */
  readonly partitionId?: ResultPartitionID;
}

/** The constructor of an error of the PartitionException family. */
export type PartitionErrorClass = {
  new (message: string, options?: PartitionErrorOptions): PartitionErrorInstance;
  readonly prototype: PartitionErrorInstance;
};

/** A SluiceError that names the partition a consumer could not read. */
export interface PartitionException extends SluiceError {
  /** The code: one of {@link PARTITION_EXCEPTION_CODES}. */
  readonly code: (typeof PARTITION_EXCEPTION_CODES)[number];
  /** The partition that could not be read (its `producerId` is the producer's attempt). */
  readonly partitionId: ResultPartitionID;
}

/**
 * The codes of the PartitionException family: the partition is not (or no longer) at its
 * producer, the producer's worker cannot be reached or was lost while a blocking partition was
 * read, the partition's data is damaged.
 */
export const PARTITION_EXCEPTION_CODES = [
  ErrorCodes.PARTITION_NOT_FOUND,
  ErrorCodes.PARTITION_CONNECTION,
  ErrorCodes.PARTITION_FILE_CORRUPTED,
] as const;

const PARTITION_CODES: ReadonlySet<string> = new Set(PARTITION_EXCEPTION_CODES);

/** `partition <id> of producer attempt <attempt>`: how every message names a partition. */
export function describePartition(partitionId: ResultPartitionID): string {
  return `partition ${partitionId.partitionId} of producer attempt ${partitionId.producerId}`;
}

function definePartitionError(name: string, code: ErrorCode): PartitionErrorClass {
  const base = defineError(name, code);
  const cls = class extends base {
    readonly partitionId?: ResultPartitionID;
    constructor(message: string, options?: PartitionErrorOptions) {
      const partitionId = options?.partitionId;
      // Whoever catches it reads the message first: it must say which partition and producer,
      // also when the thrower only had the address or the file at hand.
      const named =
        partitionId === undefined || message.includes(String(partitionId.producerId))
          ? message
          : `${message} [${describePartition(partitionId)}]`;
      super(named, options);
      if (partitionId !== undefined) this.partitionId = partitionId;
    }
  };
  Object.defineProperty(cls, "name", { value: name });
  registerCoreErrorClass(code, cls);
  return cls;
}

/**
 * The requested result partition is not registered at the producer (Flink's
 * PartitionNotFoundException): never produced there, or released already.
 */
export const PartitionNotFoundError = definePartitionError(
  "PartitionNotFoundError",
  ErrorCodes.PARTITION_NOT_FOUND,
);
export type PartitionNotFoundError = InstanceType<typeof PartitionNotFoundError>;

/**
 * The producer of a partition could not be reached (Flink's PartitionConnectionException), or
 * its worker was lost while the consumer read a blocking partition. A control-plane connection
 * that fails has this code too, without a `partitionId`.
 */
export const PartitionConnectionError = definePartitionError(
  "PartitionConnectionError",
  ErrorCodes.PARTITION_CONNECTION,
);
export type PartitionConnectionError = InstanceType<typeof PartitionConnectionError>;

/**
 * A blocking partition's file does not match its layout: truncated, a region or buffer header
 * out of range. The message names the file, region, subpartition and offset.
 */
export const PartitionFileCorruptedError = definePartitionError(
  "PartitionFileCorruptedError",
  ErrorCodes.PARTITION_FILE_CORRUPTED,
);
export type PartitionFileCorruptedError = InstanceType<typeof PartitionFileCorruptedError>;

function looksLikePartitionId(value: unknown): value is ResultPartitionID {
  if (typeof value !== "object" || value === null) return false;
  const id = value as { partitionId?: unknown; producerId?: unknown };
  // Structural, not instanceof: the id may come from another copy of this package.
  return (
    typeof id.partitionId === "object" &&
    id.partitionId !== null &&
    typeof id.producerId === "object" &&
    id.producerId !== null
  );
}

/**
 * True when `error` is a partition exception: a SluiceError of the PartitionException family
 * (not found, connection, corrupt data) that names its partition. The job side restarts the
 * partition's producer for such a failure, as Flink's failover strategy does.
 */
export function isPartitionException(error: unknown): error is PartitionException {
  if (!isSluiceError(error)) return false;
  return (
    PARTITION_CODES.has(error.code) &&
    looksLikePartitionId((error as { partitionId?: unknown }).partitionId)
  );
}
