import { describeValue } from "@sluice/core";
import {
  ALL_OPTIONS,
  type ConfigOption,
  isShuffleServiceFactory,
  missingShuffleServiceFactoryMembers,
  type ShuffleServiceFactory,
  ShuffleServiceOptions,
} from "@sluice/runtime-api";
import { knownKeysOf } from "../config/unknown-keys.js";
import { PluginInvalidError } from "./errors.js";
import { SHUFFLE_SERVICE_ALIASES } from "./factory-reference.js";
import {
  type LoadedPlugin,
  type LoaderConfiguration,
  loadPlugin,
  type PluginKind,
  type PluginLoaderOptions,
} from "./plugin-loader.js";

export type { LoaderConfiguration } from "./plugin-loader.js";

/** Options of {@link ShuffleServiceLoader.loadShuffleServiceFactory}. */
export interface ShuffleServiceLoaderOptions extends PluginLoaderOptions {
  /** Aliases for the value (default {@link SHUFFLE_SERVICE_ALIASES}: `tcp`, `ws`). */
  readonly aliases?: Readonly<Record<string, string>>;
}

/** A loaded shuffle plugin, where it came from, and the config keys it owns. */
export interface LoadedShuffleServiceFactory extends LoadedPlugin<ShuffleServiceFactory> {
  /** The plugin's own options (`ShuffleServiceFactory.configOptions`); empty when it has none. */
  readonly configOptions: readonly ConfigOption<unknown>[];
}

const SHUFFLE_PLUGIN: PluginKind<ShuffleServiceFactory> = {
  name: "ShuffleServiceFactory",
  option: ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS,
  description: "a ShuffleServiceFactory",
  aliases: SHUFFLE_SERVICE_ALIASES,
  brandKey: "@sluice/shuffle-service-factory",
  isFactory: isShuffleServiceFactory,
  missingMembers: missingShuffleServiceFactoryMembers,
};

/**
 * Loads the shuffle plugin named by `shuffle-service-factory.class` (Flink's
 * `ShuffleServiceLoader`). The coordinator and every worker call it once at start-up, with the
 * same configuration. Resolution and errors are those of {@link loadPlugin}; the export must
 * carry `SHUFFLE_SERVICE_FACTORY_BRAND` or have both factory methods.
 */
export const ShuffleServiceLoader = {
  /**
   * Loads and instantiates the configured factory.
   *
   * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for a malformed value.
   * @throws PluginNotFoundError (`SLUICE_ERR_PLUGIN_NOT_FOUND`) when the module is not found.
   * @throws PluginExportMissingError (`SLUICE_ERR_PLUGIN_EXPORT_MISSING`) when the export is absent.
   * @throws PluginInvalidError (`SLUICE_ERR_PLUGIN_INVALID`) when it is no factory.
   * @throws PluginInstantiationError (`SLUICE_ERR_PLUGIN_INSTANTIATION`) when loading the module
   *   or the constructor threw.
   */
  async loadShuffleServiceFactory(
    configuration: LoaderConfiguration,
    options: ShuffleServiceLoaderOptions = {},
  ): Promise<ShuffleServiceFactory> {
    return (await loadShuffleServiceFactoryWithInfo(configuration, options)).factory;
  },
} as const;

/**
 * Like {@link ShuffleServiceLoader.loadShuffleServiceFactory}, also returning where it came from
 * and the plugin's options, which it declares to the configuration (`addPluginOptions`) so that
 * their keys are not reported unknown.
 */
export async function loadShuffleServiceFactoryWithInfo(
  configuration: LoaderConfiguration,
  options: ShuffleServiceLoaderOptions = {},
): Promise<LoadedShuffleServiceFactory> {
  const kind =
    options.aliases === undefined
      ? SHUFFLE_PLUGIN
      : { ...SHUFFLE_PLUGIN, aliases: options.aliases };
  const loaded = await loadPlugin(configuration, kind, options);
  const configOptions = pluginConfigOptions(
    loaded.factory,
    `${SHUFFLE_PLUGIN.option.key} "${loaded.value}": export "${loaded.exportName}" of ${loaded.file}`,
  );
  configuration.addPluginOptions?.(configOptions);
  return { ...loaded, configOptions };
}

function isConfigOption(value: unknown): value is ConfigOption<unknown> {
  const option = value as Partial<ConfigOption<unknown>> | null;
  return (
    typeof option === "object" &&
    option !== null &&
    typeof option.key === "string" &&
    typeof option.parse === "function" &&
    Array.isArray(option.fallbackKeys)
  );
}

/**
 * The factory's `configOptions`, checked: an array of ConfigOptions whose keys (and fallback
 * keys) are none of Sluice's own, since two definitions of one key could disagree on its type.
 */
function pluginConfigOptions(
  factory: ShuffleServiceFactory,
  what: string,
): readonly ConfigOption<unknown>[] {
  const declared: unknown = factory.configOptions;
  if (declared === undefined) return [];
  if (!Array.isArray(declared) || !declared.every(isConfigOption)) {
    throw new PluginInvalidError(
      `${what}: configOptions must be an array of ConfigOptions (made with ConfigOptions.key(...)), found ${describeValue(declared)}`,
    );
  }
  const sluiceKeys = knownKeysOf(ALL_OPTIONS);
  const taken = [...knownKeysOf(declared)].filter((key) => sluiceKeys.has(key));
  if (taken.length > 0) {
    throw new PluginInvalidError(
      `${what}: configOptions redefines Sluice's own key${taken.length === 1 ? "" : "s"} ${taken.map((key) => JSON.stringify(key)).join(", ")}; a plugin declares only the keys Sluice does not have`,
    );
  }
  return declared;
}
