import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import { ConfigurationError } from "@sluice/core";
import {
  type ConfigOption,
  HighAvailabilityOptions,
  type ReadableConfig,
} from "@sluice/runtime-api";
import type { EtcdAuthOptions, EtcdClientOptions, EtcdTlsOptions } from "./client/etcd-client.js";

const {
  HA_ETCD_ENDPOINTS,
  HA_ETCD_LEASE_TTL,
  HA_ETCD_PASSWORD,
  HA_ETCD_SSL_CA,
  HA_ETCD_SSL_CERT,
  HA_ETCD_SSL_KEY,
  HA_ETCD_SSL_KEY_PASSWORD,
  HA_ETCD_USERNAME,
  HA_MODE,
} = HighAvailabilityOptions;

/** The TLS keys, which only `https://` endpoints use. */
const TLS_OPTIONS = [HA_ETCD_SSL_CA, HA_ETCD_SSL_CERT, HA_ETCD_SSL_KEY, HA_ETCD_SSL_KEY_PASSWORD];

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;

/** The options of the etcd client the high-availability services use, and what to warn of. */
export interface EtcdClientSettings {
  readonly options: EtcdClientOptions;
  /** Whether the endpoints are `https://`. */
  readonly secure: boolean;
  /** The TLS keys as set, for a message about a failed TLS connection. */
  readonly tlsSummary: string;
  /** Warnings about the settings (a password sent in the clear). */
  readonly warnings: readonly string[];
}

/**
 * Reads `high-availability.etcd.*` into the etcd client's options: the endpoints (their scheme
 * decides TLS), the lease TTL as the request timeout, the PEM files of the TLS keys (read and
 * checked now, so that a bad file fails the start, not the first connection), and etcd's user.
 *
 * @throws ConfigurationError naming the key (and the file) when the endpoints are missing, a
 *   TLS key is set with `http://` endpoints, a PEM file is missing, unreadable or holds no
 *   certificate or key, the certificate and key do not match or only one is set, or the user
 *   is set without a password or the other way round.
 */
export function readEtcdClientOptions(configuration: ReadableConfig): EtcdClientSettings {
  const endpointList = configuration.getOptional(HA_ETCD_ENDPOINTS);
  if (endpointList === undefined) {
    throw new ConfigurationError(
      `${HA_MODE.key}: etcd needs etcd's client URLs in ${HA_ETCD_ENDPOINTS.key} (e.g. http://127.0.0.1:2379)`,
    );
  }
  const endpoints = endpointList.split(",").map((url) => url.trim());
  // The key's own check refuses a mix of schemes.
  const secure = endpoints.every((url) => url.startsWith("https:"));
  const warnings: string[] = [];
  let tls: EtcdTlsOptions | undefined;
  if (secure) {
    tls = readTls(configuration);
  } else {
    const set = TLS_OPTIONS.filter((option) => configuration.contains(option));
    if (set.length > 0) {
      throw new ConfigurationError(
        `${set.map((option) => option.key).join(", ")} ${set.length === 1 ? "is" : "are"} set, but ${HA_ETCD_ENDPOINTS.key} = "${endpointList}" reaches etcd without TLS: make the endpoints https:// (etcd serving TLS on its client URLs), or remove the TLS keys`,
      );
    }
  }
  const auth = readAuth(configuration);
  if (auth !== undefined && !secure) {
    warnings.push(
      `${HA_ETCD_PASSWORD.key} is sent to etcd in the clear: ${HA_ETCD_ENDPOINTS.key} are http:// endpoints; use https://`,
    );
  }
  return {
    options: {
      endpoints,
      // A request that takes longer than a lease is of no use to a leader (a watch stream
      // lives on).
      requestTimeoutMs: configuration.get(HA_ETCD_LEASE_TTL),
      ...(tls === undefined ? {} : { tls }),
      ...(auth === undefined ? {} : { auth }),
    },
    secure,
    tlsSummary: TLS_OPTIONS.slice(0, 3)
      .map((option) => `${option.key} = ${configuration.getOptional(option) ?? "(not set)"}`)
      .join(", "),
    warnings,
  };
}

function readTls(configuration: ReadableConfig): EtcdTlsOptions {
  const caFile = configuration.getOptional(HA_ETCD_SSL_CA);
  const certFile = configuration.getOptional(HA_ETCD_SSL_CERT);
  const keyFile = configuration.getOptional(HA_ETCD_SSL_KEY);
  const passphrase = configuration.getOptional(HA_ETCD_SSL_KEY_PASSWORD);
  if ((certFile === undefined) !== (keyFile === undefined)) {
    const [set, missing] =
      certFile === undefined
        ? [HA_ETCD_SSL_KEY, HA_ETCD_SSL_CERT]
        : [HA_ETCD_SSL_CERT, HA_ETCD_SSL_KEY];
    throw new ConfigurationError(
      `${set.key} is set without ${missing.key}: a client certificate needs both the certificate and its private key`,
    );
  }
  const ca = caFile === undefined ? undefined : readPemFile(HA_ETCD_SSL_CA, caFile);
  if (ca !== undefined) checkCertificates(HA_ETCD_SSL_CA, caFile as string, ca);
  if (certFile === undefined || keyFile === undefined) {
    return ca === undefined ? {} : { ca };
  }
  const cert = readPemFile(HA_ETCD_SSL_CERT, certFile);
  checkCertificates(HA_ETCD_SSL_CERT, certFile, cert);
  const key = readPemFile(HA_ETCD_SSL_KEY, keyFile);
  try {
    // What Node does at the first connection, now: a key that is not PEM, needs another
    // passphrase, or does not belong to the certificate fails the start.
    createSecureContext({ cert, key, ...(passphrase === undefined ? {} : { passphrase }) });
  } catch (error) {
    throw new ConfigurationError(
      `${HA_ETCD_SSL_KEY.key} = "${keyFile}" cannot be used with ${HA_ETCD_SSL_CERT.key} = "${certFile}"${passphrase === undefined ? "" : ` and ${HA_ETCD_SSL_KEY_PASSWORD.key}`}: ${(error as Error).message}`,
      { cause: error },
    );
  }
  return {
    ...(ca === undefined ? {} : { ca }),
    cert,
    key,
    ...(passphrase === undefined ? {} : { passphrase }),
  };
}

function readAuth(configuration: ReadableConfig): EtcdAuthOptions | undefined {
  const username = configuration.getOptional(HA_ETCD_USERNAME);
  const password = configuration.getOptional(HA_ETCD_PASSWORD);
  if (username === undefined && password === undefined) return undefined;
  if (username === undefined || password === undefined) {
    const [set, missing] =
      username === undefined
        ? [HA_ETCD_PASSWORD, HA_ETCD_USERNAME]
        : [HA_ETCD_USERNAME, HA_ETCD_PASSWORD];
    throw new ConfigurationError(
      `${set.key} is set without ${missing.key}: etcd's authentication needs both`,
    );
  }
  return { username, password };
}

/** A file a key names, read now. Relative paths are from the working directory. */
function readPemFile(option: ConfigOption<string | undefined>, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigurationError(
      `${option.key} = "${file}": cannot read the file (${(error as Error).message})`,
      { cause: error },
    );
  }
}

/** Node takes a CA file without a certificate in it and then trusts nothing: refused here. */
function checkCertificates(
  option: ConfigOption<string | undefined>,
  file: string,
  pem: Buffer,
): void {
  const blocks = pem.toString("latin1").match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new ConfigurationError(
      `${option.key} = "${file}": the file holds no PEM certificate (-----BEGIN CERTIFICATE-----)`,
    );
  }
  for (const [i, block] of blocks.entries()) {
    try {
      new X509Certificate(block);
    } catch (error) {
      throw new ConfigurationError(
        `${option.key} = "${file}": certificate ${i + 1} of the file cannot be read (${(error as Error).message})`,
        { cause: error },
      );
    }
  }
}
