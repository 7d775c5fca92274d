import {
  isPartitionException,
  ResultPartitionID,
  reconstructError,
  type SluiceError,
} from "@sluice/core";

/**
 * An error as plain data, to cross a process boundary (Flink's `SerializedThrowable`): a failed
 * task's cause in its state report, a worker's error in a reply. The `code` survives, so the
 * receiver rebuilds an error that `isSluiceError(error, code)` and `instanceof` recognise.
 */
export interface SerializedThrowable {
  /** The error's class name (`name`). */
  readonly name: string;
  /** The SluiceError code, when the error had one. */
  readonly code?: string;
  /** The message, with the messages of up to four `cause` levels appended. */
  readonly message: string;
  /** The sender's stack trace, for logs. */
  readonly stack?: string;
  /**
   * The partition a partition exception (`isPartitionException`) names, as
   * `<partition>@<producer attempt>`: the job side re-runs that producer.
   */
  readonly partitionId?: string;
}

const MAX_CAUSE_DEPTH = 4;

/** Turns any thrown value into a {@link SerializedThrowable}. */
export function serializeThrowable(error: unknown): SerializedThrowable {
  if (!(error instanceof Error)) {
    return { name: "Error", message: `a non-Error value was thrown: ${String(error)}` };
  }
  let message = error.message;
  let cause: unknown = error.cause;
  for (let depth = 0; depth < MAX_CAUSE_DEPTH && cause instanceof Error; depth++) {
    message += ` (caused by ${cause.name}: ${cause.message})`;
    cause = cause.cause;
  }
  const code = (error as { code?: unknown }).code;
  return {
    name: error.name,
    ...(typeof code === "string" ? { code } : {}),
    message,
    ...(error.stack === undefined ? {} : { stack: error.stack }),
    ...(isPartitionException(error) ? { partitionId: String(error.partitionId) } : {}),
  };
}

/**
 * Rebuilds the error: a SluiceError of the same code (and, for codes of `@sluice/core`, the same
 * class), whose `stack` is the sender's when it sent one (Flink's `SerializedThrowable` keeps the
 * original stack trace too): the stack of this process would only show the control plane. A
 * partition exception keeps its `partitionId`; one that does not parse is dropped (the error
 * then is an ordinary one of its code), as the sender is another process.
 */
export function deserializeThrowable(serialized: SerializedThrowable): SluiceError {
  const partitionId = parsePartitionId(serialized.partitionId);
  const error = reconstructError(
    serialized.code,
    serialized.name,
    serialized.message,
    partitionId === undefined ? undefined : { partitionId },
  );
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  return error;
}

function parsePartitionId(text: string | undefined): ResultPartitionID | undefined {
  if (text === undefined) return undefined;
  try {
    return ResultPartitionID.parse(text);
  } catch {
    return undefined;
  }
}

/** One line for logs and reports: `Name [CODE]: message`. */
export function describeThrowable(serialized: SerializedThrowable): string {
  const label =
    serialized.code === undefined ? serialized.name : `${serialized.name} [${serialized.code}]`;
  return `${label}: ${serialized.message}`;
}
