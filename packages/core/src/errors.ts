/**
 * Sluice's error hierarchy.
 *
 * Every error a caller can act on is a {@link SluiceError} with a stable `code` (a string that never
 * changes between releases) and a `name`. `instanceof` works across duplicate installs of this
 * package because each class is branded with a `Symbol.for` key and overrides `Symbol.hasInstance`,
 * as undici does: two copies of `@sluice/core` in one process still recognise each other's errors.
 */

import { registerCoreErrorClass } from "./core-error-classes.js";

const SLUICE_ERROR_BRAND = Symbol.for("@sluice/error");

/** Every stable error code Sluice raises. `docs/errors.md` explains each one. */
export const ErrorCodes = {
  /** Generic failure with no more specific code. */
  UNKNOWN: "SLUICE_ERR_UNKNOWN",
  /** An argument broke a documented precondition (negative size, index out of range, ...). */
  INVALID_ARGUMENT: "SLUICE_ERR_INVALID_ARGUMENT",
  /** An operation was called in a state that does not allow it (add after finish, ...). */
  ILLEGAL_STATE: "SLUICE_ERR_ILLEGAL_STATE",
  /** A NetworkBufferPool cannot satisfy the required segments of a new pool or channel. */
  INSUFFICIENT_BUFFERS: "SLUICE_ERR_INSUFFICIENT_BUFFERS",
  /** A request was made to a buffer pool that has been destroyed. */
  BUFFER_POOL_DESTROYED: "SLUICE_ERR_BUFFER_POOL_DESTROYED",
  /** A buffer was recycled more often than it was retained. */
  BUFFER_RECYCLED: "SLUICE_ERR_BUFFER_RECYCLED",
  /** A record is larger than the configured maximum record size. */
  RECORD_TOO_LARGE: "SLUICE_ERR_RECORD_TOO_LARGE",
  /** Bytes could not be decoded as a record, event or value (corrupt or truncated input). */
  SERIALIZATION: "SLUICE_ERR_SERIALIZATION",
  /** A configuration value is missing, malformed or out of range. */
  CONFIG: "SLUICE_ERR_CONFIG",
  /** A serialized shuffle descriptor (JSON) is malformed, of an unknown version, or out of range. */
  DESCRIPTOR: "SLUICE_ERR_DESCRIPTOR",
  /** The module named by `shuffle-service-factory.class` could not be found. */
  PLUGIN_NOT_FOUND: "SLUICE_ERR_PLUGIN_NOT_FOUND",
  /** The module was found but does not export the requested name. */
  PLUGIN_EXPORT_MISSING: "SLUICE_ERR_PLUGIN_EXPORT_MISSING",
  /** The export is not a ShuffleServiceFactory. */
  PLUGIN_INVALID: "SLUICE_ERR_PLUGIN_INVALID",
  /** The factory's constructor (or module evaluation) threw. */
  PLUGIN_INSTANTIATION: "SLUICE_ERR_PLUGIN_INSTANTIATION",
  /** A plugin member returned something the SPI does not allow (a Promise, a malformed object). */
  PLUGIN_CONTRACT: "SLUICE_ERR_PLUGIN_CONTRACT",
  /** A task could not be deployed: it names an unknown invokable, serializer or key selector. */
  TASK_DEPLOYMENT: "SLUICE_ERR_TASK_DEPLOYMENT",
  /** A task executor has no task with the given execution attempt. */
  TASK_NOT_FOUND: "SLUICE_ERR_TASK_NOT_FOUND",
  /**
   * A slot thread of a task manager (`taskmanager.task-slots.mode: threaded`) could not start,
   * or ended while it ran tasks.
   */
  TASK_SLOT_THREAD: "SLUICE_ERR_TASK_SLOT_THREAD",
  /** The requested result partition is not registered at the producer. */
  PARTITION_NOT_FOUND: "SLUICE_ERR_PARTITION_NOT_FOUND",
  /** The producer of a partition failed; the consumer sees the producer's error. */
  PRODUCER_FAILED: "SLUICE_ERR_PRODUCER_FAILED",
  /** A partition or channel was released (cancelled) while in use. */
  CANCELLED: "SLUICE_ERR_CANCELLED",
  /** The wire protocol was violated: bad magic, unknown id, oversized frame, bad field. */
  PROTOCOL: "SLUICE_ERR_PROTOCOL",
  /** Buffers of a channel arrived out of sequence. */
  BUFFER_REORDERING: "SLUICE_ERR_BUFFER_REORDERING",
  /**
   * A connection to a remote worker could not be established, or was lost while a blocking
   * partition was read from it.
   */
  PARTITION_CONNECTION: "SLUICE_ERR_PARTITION_CONNECTION",
  /** An established connection to a remote worker failed or was closed by the remote. */
  REMOTE_TRANSPORT: "SLUICE_ERR_REMOTE_TRANSPORT",
  /** A local transport failure (socket error on our side). */
  LOCAL_TRANSPORT: "SLUICE_ERR_LOCAL_TRANSPORT",
  /** An operation did not complete within its configured timeout. */
  TIMEOUT: "SLUICE_ERR_TIMEOUT",
  /** A compressed buffer could not be decompressed (corrupt, truncated, or too large). */
  BUFFER_DECOMPRESSION: "SLUICE_ERR_BUFFER_DECOMPRESSION",
  /** A blocking partition's data or index file is truncated or does not match its layout. */
  PARTITION_FILE_CORRUPTED: "SLUICE_ERR_PARTITION_FILE_CORRUPTED",
  /** A blocking partition's data or index file could not be created or written (disk full). */
  PARTITION_FILE_WRITE: "SLUICE_ERR_PARTITION_FILE_WRITE",
  /** A peer made a data server reach one of its configured limits (connections, queued bytes). */
  LIMIT_EXCEEDED: "SLUICE_ERR_LIMIT_EXCEEDED",
  /** A checkpoint failed, or a task's snapshot could not be written or restored. */
  CHECKPOINT: "SLUICE_ERR_CHECKPOINT",
  /** A metric reporter failed to open (no free port in its range) or its `open()` threw. */
  METRIC_REPORTER: "SLUICE_ERR_METRIC_REPORTER",
  /** The conformance kit's worker script is missing from its package (not built, or cut down). */
  TCK_WORKER_NOT_FOUND: "SLUICE_ERR_TCK_WORKER_NOT_FOUND",
  /** A two-phase-commit sink could not pre-commit, commit or abort a transaction. */
  SINK_TRANSACTION: "SLUICE_ERR_SINK_TRANSACTION",
  /**
   * A write or RPC of a job manager was refused because its leadership (fencing token) is no
   * longer the current one: another job manager was elected meanwhile.
   */
  HA_FENCED: "SLUICE_ERR_HA_FENCED",
  /** The high-availability services' coordination service (etcd) could not be reached or failed. */
  HA_UNAVAILABLE: "SLUICE_ERR_HA_UNAVAILABLE",
  /** High-availability state under `high-availability.storageDir` is missing or damaged. */
  HA_STATE: "SLUICE_ERR_HA_STATE",
  /**
   * Keyed state could not be snapshotted or restored: a snapshot of another format, version, max
   * parallelism or serializer, overlapping key groups, or a key outside the owner's key groups.
   */
  KEYED_STATE: "SLUICE_ERR_KEYED_STATE",
  /**
   * A job's state cannot be assigned to its subtasks on a restore from a savepoint or retained
   * checkpoint: a vertex's max parallelism changed, a vertex's state is not in the new job, or
   * the state of a vertex restored at another parallelism cannot be redistributed.
   */
  STATE_ASSIGNMENT: "SLUICE_ERR_STATE_ASSIGNMENT",
} as const;

/** A stable Sluice error code. */
export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

/** Options accepted by every Sluice error constructor. */
export interface SluiceErrorOptions {
  /** The underlying error, kept for diagnostics. */
  cause?: unknown;
}

/**
 * Base class of every Sluice error. Check `code` (stable) rather than the message (may change).
 */
export class SluiceError extends Error {
  /** The stable code of this error; see {@link ErrorCodes}. */
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: SluiceErrorOptions) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.name = "SluiceError";
  }

  get [SLUICE_ERROR_BRAND](): string {
    return this.name;
  }

  static [Symbol.hasInstance](instance: unknown): boolean {
    return brandOf(instance) !== undefined;
  }
}

function brandOf(instance: unknown): string | undefined {
  if (typeof instance !== "object" || instance === null) return undefined;
  const brand = (instance as Record<symbol, unknown>)[SLUICE_ERROR_BRAND];
  return typeof brand === "string" ? brand : undefined;
}

/** The constructor signature shared by every concrete Sluice error class. */
export type SluiceErrorClass = {
  new (message: string, options?: SluiceErrorOptions): SluiceError;
  readonly prototype: SluiceError;
};

/**
 * Defines a SluiceError subclass with a fixed `name` and `code` whose `instanceof` checks by brand,
 * so it survives duplicate installs. Other Sluice packages use this for their own conditions.
 */
export function defineError(name: string, code: ErrorCode): SluiceErrorClass {
  const cls = class extends SluiceError {
    constructor(message: string, options?: SluiceErrorOptions) {
      super(code, message, options);
      this.name = name;
    }
    static override [Symbol.hasInstance](instance: unknown): boolean {
      return brandOf(instance) === name;
    }
  };
  Object.defineProperty(cls, "name", { value: name });
  return cls;
}

/** {@link defineError} for the classes of this package, which `reconstructError` rebuilds. */
function defineCoreError(name: string, code: ErrorCode): SluiceErrorClass {
  const cls = defineError(name, code);
  registerCoreErrorClass(code, cls);
  return cls;
}

/** An argument broke a documented precondition. */
export const IllegalArgumentError = defineCoreError(
  "IllegalArgumentError",
  ErrorCodes.INVALID_ARGUMENT,
);
export type IllegalArgumentError = InstanceType<typeof IllegalArgumentError>;

/** An operation was called in a state that does not allow it. */
export const IllegalStateError = defineCoreError("IllegalStateError", ErrorCodes.ILLEGAL_STATE);
export type IllegalStateError = InstanceType<typeof IllegalStateError>;

/** Not enough network buffers for a pool or channel; the message names the config key to raise. */
export const InsufficientBuffersError = defineCoreError(
  "InsufficientBuffersError",
  ErrorCodes.INSUFFICIENT_BUFFERS,
);
export type InsufficientBuffersError = InstanceType<typeof InsufficientBuffersError>;

/** A buffer pool was used after `destroy()`. */
export const BufferPoolDestroyedError = defineCoreError(
  "BufferPoolDestroyedError",
  ErrorCodes.BUFFER_POOL_DESTROYED,
);
export type BufferPoolDestroyedError = InstanceType<typeof BufferPoolDestroyedError>;

/** A buffer was recycled more often than retained (a double free that was prevented). */
export const BufferRecycledError = defineCoreError(
  "BufferRecycledError",
  ErrorCodes.BUFFER_RECYCLED,
);
export type BufferRecycledError = InstanceType<typeof BufferRecycledError>;

/** A record exceeds the maximum record size. */
export const RecordTooLargeError = defineCoreError(
  "RecordTooLargeError",
  ErrorCodes.RECORD_TOO_LARGE,
);
export type RecordTooLargeError = InstanceType<typeof RecordTooLargeError>;

/** Bytes could not be decoded. */
export const SerializationError = defineCoreError("SerializationError", ErrorCodes.SERIALIZATION);
export type SerializationError = InstanceType<typeof SerializationError>;

/** A configuration value is missing or malformed. */
export const ConfigurationError = defineCoreError("ConfigurationError", ErrorCodes.CONFIG);
export type ConfigurationError = InstanceType<typeof ConfigurationError>;

/** The producer failed; the message carries the producer's own error. */
export const ProducerFailedError = defineCoreError(
  "ProducerFailedError",
  ErrorCodes.PRODUCER_FAILED,
);
export type ProducerFailedError = InstanceType<typeof ProducerFailedError>;

/** A partition, view or channel was released while in use. */
export const CancelledError = defineCoreError("CancelledError", ErrorCodes.CANCELLED);
export type CancelledError = InstanceType<typeof CancelledError>;

/** The wire protocol was violated. */
export const ProtocolError = defineCoreError("ProtocolError", ErrorCodes.PROTOCOL);
export type ProtocolError = InstanceType<typeof ProtocolError>;

/** A channel received a buffer with an unexpected sequence number. */
export const BufferReorderingError = defineCoreError(
  "BufferReorderingError",
  ErrorCodes.BUFFER_REORDERING,
);
export type BufferReorderingError = InstanceType<typeof BufferReorderingError>;

/** An established connection failed or was closed by the remote side. */
export const RemoteTransportError = defineCoreError(
  "RemoteTransportError",
  ErrorCodes.REMOTE_TRANSPORT,
);
export type RemoteTransportError = InstanceType<typeof RemoteTransportError>;

/** A socket error on the local side. */
export const LocalTransportError = defineCoreError(
  "LocalTransportError",
  ErrorCodes.LOCAL_TRANSPORT,
);
export type LocalTransportError = InstanceType<typeof LocalTransportError>;

/** An operation exceeded its configured timeout. */
export const TimeoutError = defineCoreError("TimeoutError", ErrorCodes.TIMEOUT);
export type TimeoutError = InstanceType<typeof TimeoutError>;

/**
 * A compressed buffer could not be decompressed (Flink's BufferDecompressionException): its
 * compression header or codec block is corrupt or truncated, it would decompress beyond a
 * buffer, or it arrived at a gate that has no decompressor.
 */
export const BufferDecompressionError = defineCoreError(
  "BufferDecompressionError",
  ErrorCodes.BUFFER_DECOMPRESSION,
);
export type BufferDecompressionError = InstanceType<typeof BufferDecompressionError>;

/** A blocking partition's file could not be created or written; names the file and its folder. */
export const PartitionFileWriteError = defineCoreError(
  "PartitionFileWriteError",
  ErrorCodes.PARTITION_FILE_WRITE,
);
export type PartitionFileWriteError = InstanceType<typeof PartitionFileWriteError>;

/**
 * A data server refused or closed a connection because a configured limit was reached (too many
 * connections, too many bytes queued for a peer that does not read); the message names the key.
 */
export const LimitExceededError = defineCoreError("LimitExceededError", ErrorCodes.LIMIT_EXCEEDED);
export type LimitExceededError = InstanceType<typeof LimitExceededError>;

/** Returns true when `value` is a SluiceError (from any copy of this package) with `code`. */
export function isSluiceError(value: unknown, code?: ErrorCode): value is SluiceError {
  if (!(value instanceof SluiceError)) return false;
  return code === undefined || value.code === code;
}
