import { readFileSync } from "node:fs";
import type { ConnectionOptions, TlsOptions } from "node:tls";
import { ConfigurationError } from "@sluice/core";
import { type ReadableConfig, SecurityOptions } from "@sluice/runtime-api";

/**
 * TLS material and checks for the data connections (Flink's `security.ssl.internal.*`), shared by
 * the TCP (node:tls) and WebSocket (wss) transports.
 */
export interface TlsSettings {
  /** PEM private key of this worker. */
  readonly key: Buffer;
  readonly passphrase?: string;
  /** PEM certificate chain of this worker. */
  readonly cert: Buffer;
  /** PEM CA bundle; peers must present a certificate it signed (mutual authentication). */
  readonly ca: Buffer;
  /** Accepted peer certificate fingerprints (SHA-1 or SHA-256, hex, colons optional), if pinned. */
  readonly fingerprints: readonly string[];
  /**
   * How long a server waits for a client to complete the TLS handshake
   * (`security.ssl.internal.handshake-timeout`, 10 s by default); undefined: Node's 120 s.
   */
  readonly handshakeTimeoutMs: number | undefined;
  readonly minVersion: "TLSv1.2" | "TLSv1.3";
}

function readPem(config: ReadableConfig, option: typeof SecurityOptions.SSL_INTERNAL_KEY): Buffer {
  const file = config.getOptional(option);
  if (file === undefined || file === "") {
    throw new ConfigurationError(
      `'${option.key}' must name a PEM file when 'security.ssl.internal.enabled' is true`,
    );
  }
  try {
    return readFileSync(file);
  } catch (error) {
    throw new ConfigurationError(
      `'${option.key}' = "${file}": cannot read the file (${(error as Error).message})`,
      { cause: error },
    );
  }
}

/** Normalizes a fingerprint to uppercase hex without separators. */
export function normalizeFingerprint(value: string): string {
  return value.replace(/[^0-9a-fA-F]/g, "").toUpperCase();
}

/**
 * Reads the TLS settings, or `undefined` when TLS is off (`security.ssl.internal.enabled` false,
 * or `taskmanager.data.ssl.enabled` false). Missing or unreadable files fail fast with
 * ConfigurationError naming the key.
 */
export function readTlsSettings(config: ReadableConfig): TlsSettings | undefined {
  if (!config.get(SecurityOptions.SSL_INTERNAL_ENABLED)) return undefined;
  if (!config.get(SecurityOptions.DATA_SSL_ENABLED)) return undefined;
  const passphrase = config.getOptional(SecurityOptions.SSL_INTERNAL_KEY_PASSWORD);
  const fingerprintValue = config.getOptional(SecurityOptions.SSL_INTERNAL_CERT_FINGERPRINT);
  const fingerprints = (fingerprintValue ?? "")
    .split(",")
    .map((f) => normalizeFingerprint(f))
    .filter((f) => f.length > 0);
  for (const f of fingerprints) {
    if (f.length !== 40 && f.length !== 64) {
      throw new ConfigurationError(
        `'${SecurityOptions.SSL_INTERNAL_CERT_FINGERPRINT.key}' = "${fingerprintValue}": expected SHA-1 (40 hex digits) or SHA-256 (64 hex digits) fingerprints`,
      );
    }
  }
  return {
    key: readPem(config, SecurityOptions.SSL_INTERNAL_KEY),
    ...(passphrase === undefined ? {} : { passphrase }),
    cert: readPem(config, SecurityOptions.SSL_INTERNAL_CERT),
    ca: readPem(config, SecurityOptions.SSL_INTERNAL_CA),
    fingerprints,
    handshakeTimeoutMs: config.get(SecurityOptions.SSL_INTERNAL_HANDSHAKE_TIMEOUT),
    minVersion: config.get(SecurityOptions.SSL_PROTOCOL) as "TLSv1.2" | "TLSv1.3",
  };
}

/**
 * Checks a peer certificate against the pinned fingerprints; returns an error message when it
 * does not match (or `undefined` when it does, or nothing is pinned).
 */
export function checkFingerprint(
  settings: TlsSettings,
  peer: { fingerprint?: string; fingerprint256?: string } | undefined,
): string | undefined {
  if (settings.fingerprints.length === 0) return undefined;
  const sha1 = normalizeFingerprint(peer?.fingerprint ?? "");
  const sha256 = normalizeFingerprint(peer?.fingerprint256 ?? "");
  if (settings.fingerprints.some((f) => f === sha1 || f === sha256)) return undefined;
  return `peer certificate fingerprint ${peer?.fingerprint256 ?? "(none)"} is not pinned in 'security.ssl.internal.cert.fingerprint'`;
}

/**
 * The node:tls options of the data server of either transport (node:tls server, https server for
 * wss): its key and certificate chain, the CA, the minimum version, and mutual authentication:
 * a peer without a certificate signed by the CA is refused during the handshake. Fingerprint pins
 * are checked after the handshake with {@link checkFingerprint}.
 */
export function tlsServerOptions(settings: TlsSettings): TlsOptions {
  return {
    ...secureContextOptions(settings),
    requestCert: true,
    rejectUnauthorized: true,
    ...(settings.handshakeTimeoutMs === undefined
      ? {}
      : { handshakeTimeout: settings.handshakeTimeoutMs }),
  };
}

/**
 * The node:tls options of a data connection's client side for either transport: the same key,
 * chain, CA and minimum version as the server, and a server certificate that must be signed by
 * the CA. The host name is not checked: internal certificates are shared by all workers and name
 * no host, so trust comes from the CA (and the optional fingerprint pin), as with Flink's
 * internal SSL.
 */
export function tlsClientOptions(settings: TlsSettings): ConnectionOptions {
  return {
    ...secureContextOptions(settings),
    rejectUnauthorized: true,
    checkServerIdentity: () => undefined,
  };
}

function secureContextOptions(settings: TlsSettings) {
  return {
    key: settings.key,
    cert: settings.cert,
    ca: settings.ca,
    minVersion: settings.minVersion,
    ...(settings.passphrase === undefined ? {} : { passphrase: settings.passphrase }),
  };
}
