import { ConfigurationError, ErrorCodes, isSluiceError } from "@sluice/core";
import {
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  type HighAvailabilityServicesContext,
  type HighAvailabilityServicesFactory,
  HighAvailabilityUnavailableError,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { EtcdClient } from "./client/etcd-client.js";
import { EtcdKv } from "./client/etcd-kv.js";
import { EtcdHighAvailabilityServices } from "./etcd-high-availability-services.js";
import { readEtcdClientOptions } from "./read-etcd-client-options.js";

/**
 * The etcd high-availability services' factory: what `high-availability.type: etcd` loads. It
 * reads `high-availability.etcd.endpoints` (`https://` ones with the `high-availability.etcd.ssl.*`
 * files), `high-availability.etcd.username`/`.password`, `high-availability.storageDir`,
 * `high-availability.cluster-id` and `high-availability.etcd.lease-ttl`, connects, and checks
 * that etcd answers before it returns.
 */
export class EtcdHighAvailabilityServicesFactory implements HighAvailabilityServicesFactory {
  /**
   * @throws ConfigurationError when `high-availability.etcd.endpoints` or
   *   `high-availability.storageDir` is not set, or a TLS or authentication key is wrong (see
   *   the keys); HighAvailabilityUnavailableError when etcd does not answer within the lease
   *   TTL, TLS with it fails (naming the endpoint and TLS's reason), or it refuses the user.
   */
  async createHAServices(
    configuration: ReadableConfig,
    context: HighAvailabilityServicesContext = {},
  ): Promise<HighAvailabilityServices> {
    const settings = readEtcdClientOptions(configuration);
    const storageDir = configuration.getOptional(HighAvailabilityOptions.HA_STORAGE_PATH);
    if (storageDir === undefined) {
      throw new ConfigurationError(
        `${HighAvailabilityOptions.HA_MODE.key}: etcd needs ${HighAvailabilityOptions.HA_STORAGE_PATH.key}, a folder every job manager shares (the job graphs and checkpoint records are written there)`,
      );
    }
    const clusterId = configuration
      .get(HighAvailabilityOptions.HA_CLUSTER_ID)
      .replace(/^\/+|\/+$/g, "");
    const onWarning =
      context.onWarning ?? ((message) => process.emitWarning(message, "SluiceHighAvailability"));
    for (const warning of settings.warnings) onWarning(warning);
    const client = new EtcdClient(settings.options);
    try {
      // A key of the cluster's own: a user whose role grants only `/sluice/<cluster-id>/` may
      // read it.
      await new EtcdKv(client, "").get("connecting", `/sluice/${clusterId}/`);
    } catch (error) {
      client.close();
      if (settings.secure && isSluiceError(error, ErrorCodes.HA_UNAVAILABLE)) {
        throw new HighAvailabilityUnavailableError(`${error.message} (${settings.tlsSummary})`, {
          cause: error.cause,
        });
      }
      throw error;
    }
    return new EtcdHighAvailabilityServices({
      client,
      clusterId,
      storageDir,
      leaseTtlSeconds: settings.options.requestTimeoutMs / 1000,
      onWarning,
    });
  }
}
