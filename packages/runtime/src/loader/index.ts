export {
  PluginContractError,
  PluginExportMissingError,
  PluginInstantiationError,
  PluginInvalidError,
  PluginNotFoundError,
} from "./errors.js";
export {
  DEFAULT_METRIC_REPORTER_FACTORIES,
  type FactoryReference,
  METRIC_REPORTER_ALIASES,
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
  checkInputGates,
  checkResultPartitionWriters,
  createShuffleEnvironment,
  createShuffleMaster,
  type ShufflePlugin,
  startShuffleEnvironment,
} from "./plugin-contract.js";
export {
  type LoadedPlugin,
  loadPlugin,
  type PluginKind,
  type PluginLoaderOptions,
} from "./plugin-loader.js";
export {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  ShuffleServiceLoader,
  type ShuffleServiceLoaderOptions,
} from "./shuffle-service-loader.js";
