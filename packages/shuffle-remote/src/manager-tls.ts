import { readTlsSettings, type TlsSettings } from "@sluice/network/plugin";
import { type ReadableConfig, SecurityOptions } from "@sluice/runtime-api";
import { overlayConfig } from "./config-overlay.js";

/**
 * The TLS settings of the shuffle manager's port and of the workers' connections to it, or
 * `undefined` when `security.ssl.internal.enabled` is off. They are the data port's
 * (`security.ssl.internal.*`), but like the control plane's they ignore
 * `taskmanager.data.ssl.enabled`: registrations carry the workers' secrets, which must never
 * travel in plaintext while internal TLS is on.
 *
 * @throws ConfigurationError naming the key of a missing or unreadable PEM file.
 */
export function readManagerTlsSettings(configuration: ReadableConfig): TlsSettings | undefined {
  return readTlsSettings(
    overlayConfig(configuration, { [SecurityOptions.DATA_SSL_ENABLED.key]: true }),
  );
}
