import type { PluginLoaderOptions } from "@sluice/runtime";
import type { ReadableConfig } from "@sluice/runtime-api";
import {
  type ConnectedJobManager,
  type ConnectOptions,
  connectToJobManager,
  isConnectionRefused,
} from "./connect-to-job-manager.js";
import { findJobManagerLeader, type JobManagerLeader } from "./find-job-manager-leader.js";

/**
 * How long a refused connection to a retrieved leader is retried before leader retrieval is asked
 * again: the leader may have died after it published its address, which etcd keeps showing until
 * its lease expires; the next leader's address comes from retrieval, not from retrying.
 */
const LEADER_CONNECT_RETRY_MS = 1_000;

/** Options of {@link connectToJobManagerLeader}. */
export interface LeaderConnectOptions extends Omit<ConnectOptions, "host" | "port" | "retryForMs"> {
  readonly configuration: ReadableConfig & { readonly configDir?: string | undefined };
  /** How long to look for a leader that accepts the connection. */
  readonly timeoutMs: number;
  readonly warn: (message: string) => void;
  readonly loader?: PluginLoaderOptions;
  /** The leadership of a job manager just lost: it does not count (see findJobManagerLeader). */
  readonly lostToken?: string;
  /** Stops the search (the task manager is closing). */
  readonly signal?: AbortSignal;
}

/**
 * Opens the control connection to the leading job manager that leader retrieval finds; when the
 * leader it found refuses or resets the connection (killed since), it asks retrieval again, until a leader
 * accepts or `timeoutMs` passed. Resolves `undefined` without high availability (`none`).
 *
 * @throws TimeoutError when no leader was found in time; PartitionConnectionError when the last
 *   one found could not be reached; the high-availability services' errors.
 */
export async function connectToJobManagerLeader(
  options: LeaderConnectOptions,
): Promise<{ leader: JobManagerLeader; connected: ConnectedJobManager } | undefined> {
  const { configuration, timeoutMs, warn, loader, lostToken, signal, ...connect } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const leader = await findJobManagerLeader(
      configuration,
      Math.max(1, deadline - Date.now()),
      warn,
      loader,
      lostToken,
      signal,
    );
    if (leader === undefined) return undefined;
    try {
      const connected = await connectToJobManager({
        ...connect,
        host: leader.host,
        port: leader.port,
        retryForMs: Math.min(LEADER_CONNECT_RETRY_MS, Math.max(0, deadline - Date.now())),
      });
      return { leader, connected };
    } catch (error) {
      // Reset: it accepted the connection while it was being killed.
      const gone =
        isConnectionRefused(error) ||
        (error as { cause?: { code?: string } }).cause?.code === "ECONNRESET";
      if (!gone || Date.now() >= deadline || signal?.aborted) throw error;
      warn(
        `the leader leader retrieval found (${leader.host}:${leader.port}, fencing token ${leader.fencingToken}) cannot be reached (refused or reset): asking leader retrieval again`,
      );
    }
  }
}
