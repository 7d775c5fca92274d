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

  /** etcd's client URLs; their scheme decides whether etcd is reached over TLS. */
  HA_ETCD_ENDPOINTS: ConfigOptions.key("high-availability.etcd.endpoints")
    .stringType()
    .noDefaultValue()
    .withValidator((value) => {
      const urls = value.split(",").map((url) => url.trim());
      if (!urls.every((url) => /^https?:\/\/[^\s/]+(:\d+)?\/?$/.test(url))) {
        return "comma-separated URLs such as http://10.0.0.1:2379,http://10.0.0.2:2379";
      }
      // One etcd cluster serves its client URLs with one TLS setting: a mix is a typo, and a
      // failover to the plain member would send the keys (and the etcd password) in the clear.
      return new Set(urls.map((url) => url.startsWith("https:"))).size > 1
        ? "every URL with the same scheme: all http:// or all https://, not a mix"
        : undefined;
    })
    .withDescription(
      "The client URLs of the etcd cluster, comma-separated (`http://10.0.0.1:2379," +
        "http://10.0.0.2:2379`). Required by `etcd`. `https://` URLs reach etcd over TLS " +
        "(verified against `high-availability.etcd.ssl.ca`, or Node's own roots), `http://` ones " +
        "in the clear; every URL must have the same scheme, since one etcd cluster serves its " +
        "client URLs with one TLS setting and a failover to a plain URL would send everything " +
        "in the clear.",
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

  /** The certificate authorities that etcd's server certificate must chain to (PEM file). */
  HA_ETCD_SSL_CA: ConfigOptions.key("high-availability.etcd.ssl.ca")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Path of the PEM file of the certificate authorities that etcd's server certificate " +
        "must be signed by (etcdctl's `--cacert`); the certificate must also name the " +
        "endpoint's host or IP address. Without it, " +
        "`https://` endpoints are verified against Node's own roots and `NODE_EXTRA_CA_CERTS`. " +
        "Only with `https://` endpoints; read when the high-availability services start.",
    ),

  /** This process's client certificate for etcd (PEM file). */
  HA_ETCD_SSL_CERT: ConfigOptions.key("high-availability.etcd.ssl.cert")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Path of the PEM certificate chain presented to etcd, for an etcd started with " +
        "`--client-cert-auth` (etcdctl's `--cert`). Set together with " +
        "`high-availability.etcd.ssl.key`; only with `https://` endpoints.",
    ),

  /** The private key of the client certificate (PEM file). */
  HA_ETCD_SSL_KEY: ConfigOptions.key("high-availability.etcd.ssl.key")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Path of the PEM private key of `high-availability.etcd.ssl.cert` (etcdctl's " + "`--key`).",
    ),

  /** Passphrase of the client certificate's private key. */
  HA_ETCD_SSL_KEY_PASSWORD: ConfigOptions.key("high-availability.etcd.ssl.key-password")
    .stringType()
    .noDefaultValue()
    .withDescription("Passphrase of `high-availability.etcd.ssl.key`, if it is encrypted."),

  /** A user of etcd's own authentication. */
  HA_ETCD_USERNAME: ConfigOptions.key("high-availability.etcd.username")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "A user of etcd's authentication (`etcdctl auth enable`; etcdctl's `--user`). " +
        "The services authenticate as it and send the token with every request, and " +
        "authenticate again when etcd no longer knows the token (it expired after " +
        "`--auth-token-ttl` unused, or etcd forgot it). The user needs read and write on the " +
        "keys under " +
        "`/sluice/<high-availability.cluster-id>/` (`etcdctl role grant-permission <role> " +
        "--prefix readwrite /sluice/<cluster-id>/`). Set together with " +
        "`high-availability.etcd.password`; use `https://` endpoints, or the password travels " +
        "in the clear.",
    ),

  /** The password of the etcd user. */
  HA_ETCD_PASSWORD: ConfigOptions.key("high-availability.etcd.password")
    .stringType()
    .noDefaultValue()
    .withDescription("The password of `high-availability.etcd.username`."),
} as const;
