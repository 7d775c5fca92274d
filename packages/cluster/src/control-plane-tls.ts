import type { ServerOptions as HttpsServerOptions } from "node:https";
import type { TLSSocket } from "node:tls";
import {
  checkFingerprint,
  readTlsSettings,
  type TlsSettings,
  tlsClientOptions,
  tlsServerOptions,
} from "@sluice/network/plugin";
import { type ConfigOption, type ReadableConfig, SecurityOptions } from "@sluice/runtime-api";
import type { ClientOptions } from "ws";

/**
 * The TLS settings of the control plane, or `undefined` when `security.ssl.internal.enabled` is
 * off. They are the data plane's (`security.ssl.internal.key`, `.cert`, `.ca`, the fingerprint
 * pin), read by the same function; `taskmanager.data.ssl.enabled` switches only the data port.
 *
 * @throws ConfigurationError naming the key of a missing or unreadable PEM file.
 */
export function readControlPlaneTls(config: ReadableConfig): TlsSettings | undefined {
  if (!config.get(SecurityOptions.SSL_INTERNAL_ENABLED)) return undefined;
  const dataSsl = SecurityOptions.DATA_SSL_ENABLED as ConfigOption<unknown>;
  const withDataSsl: ReadableConfig = {
    get: <T>(option: ConfigOption<T>): T => (option === dataSsl ? (true as T) : config.get(option)),
    getOptional: <T>(option: ConfigOption<T>) =>
      option === dataSsl ? (true as Exclude<T, undefined>) : config.getOptional(option),
    contains: (option) => option === dataSsl || config.contains(option),
  };
  return readTlsSettings(withDataSsl);
}

/**
 * HTTPS server options that require a client certificate signed by the internal CA: the data
 * server's own (one mapping of the settings to node:tls options for both planes).
 */
export function serverTlsOptions(settings: TlsSettings): HttpsServerOptions {
  return tlsServerOptions(settings);
}

/** Why a TLS peer must be dropped despite a trusted certificate (the pin), or undefined. */
export function pinViolation(settings: TlsSettings, socket: TLSSocket): string | undefined {
  return checkFingerprint(settings, socket.getPeerCertificate());
}

/**
 * WebSocket client options that present this side's certificate and trust only the CA: the data
 * connections' own. Internal certificates name no host, so trust comes from the CA and the pin.
 */
export function clientTlsOptions(settings: TlsSettings): ClientOptions {
  // @types/ws types checkServerIdentity as returning boolean; node:tls reads undefined as "ok".
  const { checkServerIdentity: _, ...options } = tlsClientOptions(settings);
  return { ...options, checkServerIdentity: () => false };
}
