import { defineError, ErrorCodes } from "@sluice/core";

/**
 * The module named by `shuffle-service-factory.class` could not be found. The message names the
 * key, the value, every place that was searched and what was found there.
 * Code: `SLUICE_ERR_PLUGIN_NOT_FOUND`.
 */
export const PluginNotFoundError = defineError("PluginNotFoundError", ErrorCodes.PLUGIN_NOT_FOUND);
export type PluginNotFoundError = InstanceType<typeof PluginNotFoundError>;

/**
 * The plugin module was loaded but does not have the requested export. The message lists the
 * exports it has. Code: `SLUICE_ERR_PLUGIN_EXPORT_MISSING`.
 */
export const PluginExportMissingError = defineError(
  "PluginExportMissingError",
  ErrorCodes.PLUGIN_EXPORT_MISSING,
);
export type PluginExportMissingError = InstanceType<typeof PluginExportMissingError>;

/**
 * The export is not a ShuffleServiceFactory (no brand, and members missing, or not a class or
 * object at all). The message lists what is missing and what was found.
 * Code: `SLUICE_ERR_PLUGIN_INVALID`.
 */
export const PluginInvalidError = defineError("PluginInvalidError", ErrorCodes.PLUGIN_INVALID);
export type PluginInvalidError = InstanceType<typeof PluginInvalidError>;

/**
 * Evaluating the plugin module or constructing the factory threw; the original error is the
 * `cause`. Code: `SLUICE_ERR_PLUGIN_INSTANTIATION`.
 */
export const PluginInstantiationError = defineError(
  "PluginInstantiationError",
  ErrorCodes.PLUGIN_INSTANTIATION,
);
export type PluginInstantiationError = InstanceType<typeof PluginInstantiationError>;

/**
 * A plugin member returned something the SPI does not allow: a Promise where the SPI is
 * synchronous, an object without the required methods, a port that is not a number, a list of the
 * wrong length. The message names the plugin, the member and what it returned.
 * Code: `SLUICE_ERR_PLUGIN_CONTRACT`.
 */
export const PluginContractError = defineError("PluginContractError", ErrorCodes.PLUGIN_CONTRACT);
export type PluginContractError = InstanceType<typeof PluginContractError>;
