import { atLeast, ConfigOptions } from "../config-option.js";

/**
 * TLS for data connections between workers (Flink's `SecurityOptions`, internal connectivity).
 * Node reads PEM files, so Sluice names key, certificate and CA files where Flink names Java key
 * stores.
 */
export const SecurityOptions = {
  /** Master switch for TLS on internal connections. */
  SSL_INTERNAL_ENABLED: ConfigOptions.key("security.ssl.internal.enabled")
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "Turns on TLS for internal connections between workers (data connections, when " +
        "`taskmanager.data.ssl.enabled` is also true).",
    ),

  /** TLS for data connections, effective only with `security.ssl.internal.enabled`. */
  DATA_SSL_ENABLED: ConfigOptions.key("taskmanager.data.ssl.enabled")
    .booleanType()
    .defaultValue(true)
    .withDescription(
      "Whether data connections use TLS; effective only when `security.ssl.internal.enabled` is " +
        "true.",
    ),

  /** Private key of this worker (PEM file). */
  SSL_INTERNAL_KEY: ConfigOptions.key("security.ssl.internal.key")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Sluice: path of the PEM private key workers present on internal connections (Flink uses " +
        "`security.ssl.internal.keystore`).",
    ),

  /** Passphrase of the private key. */
  SSL_INTERNAL_KEY_PASSWORD: ConfigOptions.key("security.ssl.internal.key-password")
    .stringType()
    .noDefaultValue()
    .withDescription("Passphrase of `security.ssl.internal.key`, if it is encrypted."),

  /** Certificate chain of this worker (PEM file). */
  SSL_INTERNAL_CERT: ConfigOptions.key("security.ssl.internal.cert")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Sluice: path of the PEM certificate chain matching `security.ssl.internal.key`.",
    ),

  /** Trusted CA certificates (PEM file). */
  SSL_INTERNAL_CA: ConfigOptions.key("security.ssl.internal.ca")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Sluice: path of the PEM CA certificates that internal peers' certificates must chain to " +
        "(Flink uses `security.ssl.internal.truststore`). Both sides authenticate each other.",
    ),

  /** Certificate pinning. */
  SSL_INTERNAL_CERT_FINGERPRINT: ConfigOptions.key("security.ssl.internal.cert.fingerprint")
    .stringType()
    .noDefaultValue()
    .withDescription(
      "Pins the peer certificate: comma-separated SHA-256 fingerprints (hex, colons optional); a " +
        "peer whose certificate matches none is rejected even if the CA trusts it.",
    ),

  /** TLS handshake timeout. */
  SSL_INTERNAL_HANDSHAKE_TIMEOUT: ConfigOptions.key("security.ssl.internal.handshake-timeout")
    .durationType()
    .defaultValue("10s")
    .withValidator(atLeast(1, "a duration"))
    .withDescription(
      "Timeout of the TLS handshake of internal connections: the data server drops a client " +
        "that has not completed it in time. Flink's default (-1) leaves it to Netty, which uses " +
        "10 s; Sluice uses the same instead of Node's 120 s.",
    ),

  /** Lowest TLS protocol version accepted. */
  SSL_PROTOCOL: ConfigOptions.key("security.ssl.protocol")
    .enumType(["TLSv1.2", "TLSv1.3"])
    .defaultValue("TLSv1.2")
    .withDescription("Lowest TLS protocol version accepted on internal connections."),
} as const;
