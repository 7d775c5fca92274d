import { ConfigOptions } from "../config-option.js";

/**
 * Options of the job manager's high-availability services (Flink's `HighAvailabilityOptions`):
 * which services, the shared folder for their data and the namespace of one cluster, and the
 * etcd implementation's own keys.
 */
export const HighAvailabilityOptions = {
  /** Which HighAvailabilityServices the job managers and task managers use. */
  HA_MODE: ConfigOptions.key("high-availability.type")
    .classType()
    .defaultValue("none")
    .withDeprecatedKeys("high-availability")
    .withDescription(
      "The high-availability services: `none` (one job manager, no failover of the job " +
        "manager; nothing to install), `etcd` (leader election, leader retrieval and the job " +
        "graph, completed-checkpoint and checkpoint ID stores in etcd, from the " +
        "`@sluice/ha-etcd` package), or a `HighAvailabilityServicesFactory` as " +
        "`<module>#<export>`, resolved like `shuffle-service-factory.class`. Every job manager " +
        "and task manager of a cluster must use the same.",
    ),

  /** Where the services keep their data; the coordination service holds only pointers. */
  HA_STORAGE_PATH: ConfigOptions.key("high-availability.storageDir")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "A folder every job manager can read and write (a shared file system on several " +
        "hosts): the job graphs and completed-checkpoint records are written here, and only " +
        "their paths go into the coordination service. Required by `etcd`.",
    ),

  /** The namespace of one cluster in the coordination service and the storage folder. */
  HA_CLUSTER_ID: ConfigOptions.key("high-availability.cluster-id")
    .stringType()
    .defaultValue("/default")
    .withValidator((value) =>
      /^\/?[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/.test(value)
        ? undefined
        : "letters, digits, '.', '_', '-' and '/' between names",
    )
    .withDescription(
      "The cluster's name: its keys in etcd live under `/sluice/<cluster-id>/` and its files " +
        "under `<high-availability.storageDir>/<cluster-id>/`, so several clusters can share " +
        "one etcd and one folder. Every job manager and task manager of a cluster sets the same.",
    ),

  /** etcd's client URLs. */
  HA_ETCD_ENDPOINTS: ConfigOptions.key("high-availability.etcd.endpoints")
    .stringType()
    .noDefaultValue()
    .withValidator((value) =>
      value
        .split(",")
        .map((url) => url.trim())
        .every((url) => /^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(url))
        ? undefined
        : "comma-separated URLs such as http://10.0.0.1:2379,http://10.0.0.2:2379",
    )
    .withDescription(
      "The client URLs of the etcd cluster, comma-separated (`http://10.0.0.1:2379," +
        "http://10.0.0.2:2379`). Required by `etcd`.",
    ),

  /** How long a leader stays leader without renewing its lease. */
  HA_ETCD_LEASE_TTL: ConfigOptions.key("high-availability.etcd.lease-ttl")
    .durationType()
    .defaultValue("15s")
    .withValidator((value) =>
      value >= 1000 && value % 1000 === 0 ? undefined : "whole seconds, at least 1s",
    )
    .withDescription(
      "The time to live of the leader's etcd lease, in whole seconds (Flink's Kubernetes lease " +
        "duration, 15 s by default). The leader renews it every third of the TTL; when the " +
        "leader dies or is cut off from etcd, a standby is elected within about this time, and the " +
        "deposed leader's writes are refused from then on.",
    ),
} as const;
