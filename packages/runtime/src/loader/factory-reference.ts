import { ConfigurationError } from "@sluice/core";

/** Short names for the bundled plugins, accepted as `shuffle-service-factory.class` values. */
export const SHUFFLE_SERVICE_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  tcp: "@sluice/shuffle-tcp#TcpShuffleServiceFactory",
  ws: "@sluice/shuffle-ws#WsShuffleServiceFactory",
  remote: "@sluice/shuffle-remote#RemoteShuffleServiceFactory",
});

/** Short names for the bundled metric reporters, accepted as `metrics.reporter.<name>.factory.class`. */
export const METRIC_REPORTER_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  prometheus: "@sluice/metrics-prometheus#PrometheusReporterFactory",
});

/**
 * The factory of a reporter whose name is configured without `factory.class`: Flink's examples
 * call the Prometheus reporter `prom`, so `metrics.reporter.prom.port` alone enables it.
 */
export const DEFAULT_METRIC_REPORTER_FACTORIES: Readonly<Record<string, string>> = Object.freeze({
  prom: "prometheus",
});

/** How a module specifier is located. */
export type SpecifierKind = "bare" | "relative" | "absolute" | "file-url";

/** A parsed plugin reference (`shuffle-service-factory.class`, a reporter's `factory.class`). */
export interface FactoryReference {
  /** The value as configured (before alias expansion). */
  readonly value: string;
  /** The alias used, if the value was one. */
  readonly alias: string | undefined;
  /** The module specifier (before `#`). */
  readonly specifier: string;
  /** The export name (after `#`); `undefined` = the default export. */
  readonly exportName: string | undefined;
  /** How the specifier is located. */
  readonly kind: SpecifierKind;
}

const URL_SCHEME = /^([a-z][a-z0-9+.-]+):/i;

/**
 * Parses `<module>#<export>` (alias expanded first). The last `#` separates the export, so a
 * module path may itself contain `#`.
 *
 * @param key the config key, for messages.
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for an empty module or export, or a URL scheme
 *   other than `file:`.
 */
export function parseFactoryReference(
  value: string,
  key: string,
  aliases: Readonly<Record<string, string>> = SHUFFLE_SERVICE_ALIASES,
): FactoryReference {
  const trimmed = value.trim();
  const alias = Object.hasOwn(aliases, trimmed) ? trimmed : undefined;
  const expanded = alias === undefined ? trimmed : (aliases[alias] as string);
  const hash = expanded.lastIndexOf("#");
  const specifier = (hash < 0 ? expanded : expanded.slice(0, hash)).trim();
  const exportName = hash < 0 ? undefined : expanded.slice(hash + 1).trim();
  const shown = `${key} = ${JSON.stringify(value)}`;
  if (specifier === "") {
    throw new ConfigurationError(
      `Invalid value for config key ${shown}: the module before "#" is empty; expected <module>#<export>`,
    );
  }
  if (exportName === "") {
    throw new ConfigurationError(
      `Invalid value for config key ${shown}: the export name after "#" is empty; expected <module>#<export>, or <module> alone for the default export`,
    );
  }
  let kind: SpecifierKind;
  const scheme = URL_SCHEME.exec(specifier)?.[1]?.toLowerCase();
  if (scheme === "file") kind = "file-url";
  else if (scheme !== undefined && !/^[a-z]:[\\/]/i.test(specifier)) {
    throw new ConfigurationError(
      `Invalid value for config key ${shown}: the "${scheme}:" scheme is not supported; use a package name, a relative or absolute path, or a file: URL`,
    );
  } else if (/^\.\.?([\\/]|$)/.test(specifier)) kind = "relative";
  else if (
    specifier.startsWith("/") ||
    /^[a-z]:[\\/]/i.test(specifier) ||
    specifier.startsWith("\\\\")
  ) {
    kind = "absolute";
  } else kind = "bare";
  return { value, alias, specifier, exportName, kind };
}
