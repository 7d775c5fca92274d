import { isSluiceError } from "@sluice/core";
import { HighAvailabilityUnavailableError } from "@sluice/runtime-api";

/**
 * Runs one etcd operation; a failure of the client (etcd unreachable, a deadline passed, a
 * refused request) becomes a HighAvailabilityUnavailableError that names the operation and the
 * endpoints. Sluice's own errors (a fenced write) pass through unchanged.
 */
export async function etcdCall<T>(
  what: string,
  endpoints: readonly string[],
  operation: () => Promise<T>,
): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (isSluiceError(error)) throw error;
    throw new HighAvailabilityUnavailableError(
      `${what} failed against etcd at ${endpoints.join(",")}: ${(error as Error)?.message ?? String(error)}`,
      { cause: error },
    );
  }
}
