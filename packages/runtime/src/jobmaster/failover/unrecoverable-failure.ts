import { ErrorCodes, isSluiceError } from "@sluice/core";

/** How deep a cause chain is searched for a configuration error. */
const MAX_CAUSE_DEPTH = 8;

/**
 * Whether `cause` fails the job at once, whatever its restart strategy (Flink's
 * `ExecutionFailureHandler` asks `ThrowableClassifier` the same and suppresses restarts for a
 * non-recoverable error): a configuration error (`SLUICE_ERR_CONFIG`) anywhere in its cause
 * chain. Every attempt would meet the same configuration — a shuffle plugin that refuses the
 * job's partition types (a remote shuffle that stores BLOCKING partitions only, asked for a
 * streaming job), a key whose value cannot work — so restarting could only loop. So does a
 * state that does not fit the job restored from a savepoint (`SLUICE_ERR_STATE_ASSIGNMENT`: a
 * vertex's state that cannot be redistributed to its new parallelism), which every restore of
 * the same savepoint meets again. User code may throw a `ConfigurationError` for the same effect
 * (Flink's `SuppressRestartsException`).
 */
export function isUnrecoverableFailure(cause: unknown): boolean {
  let current: unknown = cause;
  for (let depth = 0; depth <= MAX_CAUSE_DEPTH && current instanceof Error; depth++) {
    if (isSluiceError(current, ErrorCodes.CONFIG)) return true;
    if (isSluiceError(current, ErrorCodes.STATE_ASSIGNMENT)) return true;
    current = current.cause;
  }
  return false;
}
