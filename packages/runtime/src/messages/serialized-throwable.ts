import { reconstructError, type SluiceError } from "@sluice/core";

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
  };
}

/**
 * Rebuilds the error: a SluiceError of the same code (and, for codes of `@sluice/core`, the same
 * class), whose `stack` is the sender's when it sent one (Flink's `SerializedThrowable` keeps the
 * original stack trace too): the stack of this process would only show the control plane.
 */
export function deserializeThrowable(serialized: SerializedThrowable): SluiceError {
  const error = reconstructError(serialized.code, serialized.name, serialized.message);
  if (serialized.stack !== undefined) error.stack = serialized.stack;
  return error;
}

/** One line for logs and reports: `Name [CODE]: message`. */
export function describeThrowable(serialized: SerializedThrowable): string {
  const label =
    serialized.code === undefined ? serialized.name : `${serialized.name} [${serialized.code}]`;
  return `${label}: ${serialized.message}`;
}
