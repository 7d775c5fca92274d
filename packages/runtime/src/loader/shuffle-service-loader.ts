import {
  isShuffleServiceFactory,
  missingShuffleServiceFactoryMembers,
  type ShuffleServiceFactory,
  ShuffleServiceOptions,
} from "@sluice/runtime-api";
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

/** A loaded shuffle plugin and where it came from. */
export type LoadedShuffleServiceFactory = LoadedPlugin<ShuffleServiceFactory>;

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

/** Like {@link ShuffleServiceLoader.loadShuffleServiceFactory}, also returning where it came from. */
export function loadShuffleServiceFactoryWithInfo(
  configuration: LoaderConfiguration,
  options: ShuffleServiceLoaderOptions = {},
): Promise<LoadedShuffleServiceFactory> {
  const kind =
    options.aliases === undefined
      ? SHUFFLE_PLUGIN
      : { ...SHUFFLE_PLUGIN, aliases: options.aliases };
  return loadPlugin(configuration, kind, options);
}
