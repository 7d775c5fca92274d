export {
  PluginExportMissingError,
  PluginInstantiationError,
  PluginInvalidError,
  PluginNotFoundError,
} from "./errors.js";
export {
  type FactoryReference,
  parseFactoryReference,
  SHUFFLE_SERVICE_ALIASES,
  type SpecifierKind,
} from "./factory-reference.js";
export {
  type ConfigurationAndShufflePlugin,
  type LoadConfigurationAndShufflePluginOptions,
  loadConfigurationAndShufflePlugin,
} from "./load-configuration-and-shuffle-plugin.js";
export {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  ShuffleServiceLoader,
  type ShuffleServiceLoaderOptions,
} from "./shuffle-service-loader.js";
