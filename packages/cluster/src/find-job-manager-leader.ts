import type { PluginLoaderOptions } from "@sluice/runtime";
import type { ReadableConfig } from "@sluice/runtime-api";
import type { HostAndPort } from "./job-manager.js";
import { LeaderRetriever } from "./leader-retriever.js";

/** The leading job manager, as leader retrieval found it. */
export interface JobManagerLeader extends HostAndPort {
  /** Its leadership's fencing token, sent at `hello` so that no other job manager accepts it. */
  readonly fencingToken: string;
}

/**
 * Looks the leading job manager up through the high-availability services that
 * `high-availability.type` names (Flink's task managers retrieve the ResourceManager's leader the
 * same way); `undefined` with `none`, where `jobmanager.rpc.address` is the job manager.
 *
 * @param lostToken - the leadership of a job manager that was just lost: it does not count, even
 *   while etcd still shows it (its lease has not expired yet).
 * @param signal - stops the search (the task manager is closing): it rejects with the reason.
 * @throws TimeoutError when no leader confirmed its address within `timeoutMs`; the services'
 *   errors (ConfigurationError, HighAvailabilityUnavailableError).
 */
export async function findJobManagerLeader(
  configuration: ReadableConfig & { readonly configDir?: string | undefined },
  timeoutMs: number,
  onWarning: (message: string) => void,
  loader: PluginLoaderOptions = {},
  lostToken?: string,
  signal?: AbortSignal,
): Promise<JobManagerLeader | undefined> {
  const retriever = await LeaderRetriever.open(configuration, onWarning, loader);
  if (retriever === undefined) return undefined;
  try {
    const leader = await retriever.awaitLeader(
      (found) => found.fencingToken !== lostToken,
      timeoutMs,
      `no ${lostToken === undefined ? "" : "new "}job manager was elected leader`,
      signal,
    );
    return { ...hostAndPortOf(leader.address), fencingToken: leader.fencingToken };
  } finally {
    await retriever.close();
  }
}

/** The host (an IPv6 address without brackets) and port of a published URL. */
export function hostAndPortOf(address: string): HostAndPort {
  const url = new URL(address);
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) };
}
