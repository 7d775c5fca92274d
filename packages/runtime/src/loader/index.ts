export {
  PluginContractError,
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
  checkInputGates,
  checkResultPartitionWriters,
  createShuffleEnvironment,
  createShuffleMaster,
  type ShufflePlugin,
  startShuffleEnvironment,
} from "./plugin-contract.js";
export {
  type LoadedShuffleServiceFactory,
  type LoaderConfiguration,
  loadShuffleServiceFactoryWithInfo,
  ShuffleServiceLoader,
  type ShuffleServiceLoaderOptions,
} from "./shuffle-service-loader.js";
