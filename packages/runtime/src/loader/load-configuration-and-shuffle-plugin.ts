import { Configuration, type LoadConfigurationOptions } from "../config/configuration.js";
import { knownOptionsWith } from "../config/unknown-keys.js";
import {
  type LoadedShuffleServiceFactory,
  loadShuffleServiceFactoryWithInfo,
  type ShuffleServiceLoaderOptions,
} from "./shuffle-service-loader.js";

/** Options of {@link loadConfigurationAndShufflePlugin}. */
export interface LoadConfigurationAndShufflePluginOptions
  extends Omit<LoadConfigurationOptions, "knownOptions"> {
  /**
   * Values set after the config file and the `-D` overrides, e.g. from an application's own
   * command-line flags (`--shuffle ws`); they win over both.
   */
  readonly overrides?: Readonly<Record<string, unknown>>;
  /** Where and how the plugin is looked for (application folders, aliases, conditions). */
  readonly loader?: ShuffleServiceLoaderOptions;
}

/** A process's configuration and the shuffle plugin it names. */
export interface ConfigurationAndShufflePlugin {
  readonly configuration: Configuration;
  readonly shuffle: LoadedShuffleServiceFactory;
}

/**
 * Loads a Sluice process's configuration and its shuffle plugin, in the order that lets the
 * plugin own config keys: the config file and the `-D` overrides, then `overrides`, then the
 * plugin they name (`shuffle-service-factory.class`), then one `SluiceConfigWarning` for the
 * keys neither Sluice nor the plugin (`ShuffleServiceFactory.configOptions`) knows, then a check
 * of every set option of both, so an invalid value fails at start-up.
 *
 * @throws ConfigurationError for an unreadable file, a malformed `-D` or an invalid value.
 * @throws the loader's errors when the plugin cannot be loaded (see `ShuffleServiceLoader`).
 */
export async function loadConfigurationAndShufflePlugin(
  options: LoadConfigurationAndShufflePluginOptions = {},
): Promise<ConfigurationAndShufflePlugin> {
  const configuration = Configuration.load(options);
  for (const [key, value] of Object.entries(options.overrides ?? {})) {
    configuration.set(key, value);
  }
  const shuffle = await loadShuffleServiceFactoryWithInfo(configuration, options.loader);
  configuration.reportUnknownKeys();
  configuration.validate(knownOptionsWith(shuffle.configOptions));
  return { configuration, shuffle };
}
