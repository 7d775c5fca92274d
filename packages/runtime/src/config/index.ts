export {
  CONFIG_WARNING_TYPE,
  Configuration,
  type ConfigurationLocation,
  type LoadConfigurationOptions,
  type UnknownKeyCheck,
} from "./configuration.js";
export { type DynamicProperties, parseDynamicProperties } from "./dynamic-properties.js";
export { knownOptionsWith } from "./unknown-keys.js";
