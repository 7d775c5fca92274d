export { ALL_OPTIONS, CONFIG_OPTION_GROUPS, type ConfigOptionGroup } from "./all-options.js";
export { ExecutionOptions } from "./execution-options.js";
export { NettyShuffleEnvironmentOptions } from "./netty-shuffle-options.js";
export { NetworkMemoryOptions } from "./network-memory-options.js";
export { SecurityOptions } from "./security-options.js";
export {
  DEFAULT_SHUFFLE_SERVICE_FACTORY,
  ShuffleServiceOptions,
} from "./shuffle-service-options.js";
export { TaskManagerOptions } from "./task-manager-options.js";
