import { ConfigurationError } from "@sluice/core";
import {
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  type HighAvailabilityServicesContext,
  type HighAvailabilityServicesFactory,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { EtcdClient } from "./client/etcd-client.js";
import { EtcdKv } from "./client/etcd-kv.js";
import { EtcdHighAvailabilityServices } from "./etcd-high-availability-services.js";

/**
 * The etcd high-availability services' factory: what `high-availability.type: etcd` loads. It
 * reads `high-availability.etcd.endpoints`, `high-availability.storageDir`,
 * `high-availability.cluster-id` and `high-availability.etcd.lease-ttl`, connects, and checks
 * that etcd answers before it returns.
 */
export class EtcdHighAvailabilityServicesFactory implements HighAvailabilityServicesFactory {
  /**
   * @throws ConfigurationError when `high-availability.etcd.endpoints` or
   *   `high-availability.storageDir` is not set; HighAvailabilityUnavailableError when etcd does
   *   not answer within the lease TTL.
   */
  async createHAServices(
    configuration: ReadableConfig,
    context: HighAvailabilityServicesContext = {},
  ): Promise<HighAvailabilityServices> {
    const endpointList = configuration.getOptional(HighAvailabilityOptions.HA_ETCD_ENDPOINTS);
    if (endpointList === undefined) {
      throw new ConfigurationError(
        `${HighAvailabilityOptions.HA_MODE.key}: etcd needs etcd's client URLs in ${HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key} (e.g. http://127.0.0.1:2379)`,
      );
    }
    const storageDir = configuration.getOptional(HighAvailabilityOptions.HA_STORAGE_PATH);
    if (storageDir === undefined) {
      throw new ConfigurationError(
        `${HighAvailabilityOptions.HA_MODE.key}: etcd needs ${HighAvailabilityOptions.HA_STORAGE_PATH.key}, a folder every job manager shares (the job graphs and checkpoint records are written there)`,
      );
    }
    const endpoints = endpointList.split(",").map((url) => url.trim());
    const clusterId = configuration
      .get(HighAvailabilityOptions.HA_CLUSTER_ID)
      .replace(/^\/+|\/+$/g, "");
    const ttlMs = configuration.get(HighAvailabilityOptions.HA_ETCD_LEASE_TTL);
    // A request that takes longer than a lease is of no use to a leader (a watch stream lives
    // on). `https://` endpoints are verified against Node's roots and NODE_EXTRA_CA_CERTS.
    const client = new EtcdClient({ endpoints, requestTimeoutMs: ttlMs });
    try {
      await new EtcdKv(client, "").get("connecting", "/sluice/");
    } catch (error) {
      client.close();
      throw error;
    }
    return new EtcdHighAvailabilityServices({
      client,
      clusterId,
      storageDir,
      leaseTtlSeconds: ttlMs / 1000,
      onWarning:
        context.onWarning ?? ((message) => process.emitWarning(message, "SluiceHighAvailability")),
    });
  }
}
