import { TimeoutError } from "@sluice/core";
import type { PluginLoaderOptions } from "@sluice/runtime";
import {
  HighAvailabilityOptions,
  type LeaderInformation,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { EmbeddedHighAvailabilityServices } from "./embedded-high-availability-services.js";
import { loadHighAvailabilityServices } from "./high-availability-services-loader.js";
import type { HostAndPort } from "./job-manager.js";

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
  const leader = await retrieveLeader(
    configuration,
    timeoutMs,
    onWarning,
    loader,
    (found) => found.fencingToken !== lostToken,
    `no ${lostToken === undefined ? "" : "new "}job manager was elected leader`,
    signal,
  );
  return leader === undefined
    ? undefined
    : { ...hostAndPortOf(leader.address), fencingToken: leader.fencingToken };
}

/**
 * Where the leading job manager's REST endpoint serves, as it published it through the
 * high-availability services (Flink's cluster REST endpoint leader retrieval, which Flink's
 * `RestClusterClient` follows); `undefined` with `none`.
 *
 * @throws TimeoutError when no leader published a REST endpoint within `timeoutMs`; the
 *   services' errors.
 */
export async function findRestEndpointLeader(
  configuration: ReadableConfig & { readonly configDir?: string | undefined },
  timeoutMs: number,
  onWarning: (message: string) => void,
  loader: PluginLoaderOptions = {},
): Promise<HostAndPort | undefined> {
  const leader = await retrieveLeader(
    configuration,
    timeoutMs,
    onWarning,
    loader,
    (found) => found.restAddress !== undefined,
    "no leading job manager published a REST endpoint",
  );
  return leader?.restAddress === undefined ? undefined : hostAndPortOf(leader.restAddress);
}

/** The host (an IPv6 address without brackets) and port of a published URL. */
function hostAndPortOf(address: string): HostAndPort {
  const url = new URL(address);
  return { host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port) };
}

/**
 * The first leader retrieval reports that `accept` takes; `undefined` with the embedded services
 * (`none`), which have nothing to retrieve.
 */
async function retrieveLeader(
  configuration: ReadableConfig & { readonly configDir?: string | undefined },
  timeoutMs: number,
  onWarning: (message: string) => void,
  loader: PluginLoaderOptions,
  accept: (leader: LeaderInformation) => boolean,
  notFound: string,
  signal?: AbortSignal,
): Promise<LeaderInformation | undefined> {
  const services = await loadHighAvailabilityServices(configuration, { onWarning }, loader);
  if (services instanceof EmbeddedHighAvailabilityServices) {
    await services.close();
    return undefined;
  }
  const retriever = services.getJobManagerLeaderRetriever();
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<LeaderInformation>((resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new TimeoutError(
              `${notFound} within ${timeoutMs} ms (${HighAvailabilityOptions.HA_MODE.key}: ${configuration.get(HighAvailabilityOptions.HA_MODE)}, cluster ${configuration.get(HighAvailabilityOptions.HA_CLUSTER_ID)})`,
            ),
          ),
        timeoutMs,
      );
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      if (signal?.aborted) reject(signal.reason);
      retriever
        .start({
          notifyLeaderAddress: (found) => {
            if (found !== undefined && accept(found)) resolve(found);
          },
          handleError: reject,
        })
        .catch(reject);
    });
  } finally {
    clearTimeout(timer);
    await retriever.stop();
    await services.close();
  }
}
