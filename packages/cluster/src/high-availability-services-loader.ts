import { ConfigurationError } from "@sluice/core";
import type { PluginLoaderOptions } from "@sluice/runtime";
import { loadPlugin, type PluginKind } from "@sluice/runtime/plugin";
import {
  type ConfigOption,
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  type HighAvailabilityServicesContext,
  type HighAvailabilityServicesFactory,
  isHighAvailabilityServicesFactory,
  type ReadableConfig,
} from "@sluice/runtime-api";
import { EmbeddedHighAvailabilityServices } from "./embedded-high-availability-services.js";

/** Short names of `high-availability.type` that name a plugin module. */
export const HIGH_AVAILABILITY_ALIASES: Readonly<Record<string, string>> = Object.freeze({
  etcd: "@sluice/ha-etcd#EtcdHighAvailabilityServicesFactory",
});

const KIND: PluginKind<HighAvailabilityServicesFactory> = {
  name: "HighAvailabilityServicesFactory",
  option: HighAvailabilityOptions.HA_MODE as ConfigOption<string | undefined>,
  description: "none, etcd, or <module>#<export> of a HighAvailabilityServicesFactory",
  aliases: HIGH_AVAILABILITY_ALIASES,
  brandKey: "@sluice/high-availability-services-factory",
  isFactory: isHighAvailabilityServicesFactory,
  missingMembers: (value) => (isHighAvailabilityServicesFactory(value) ? [] : ["createHAServices"]),
};

/**
 * Whether `high-availability.type` names high-availability services, i.e. is not `none` (any
 * case, as Flink's `HighAvailabilityMode.isHighAvailabilityModeActivated`): job managers are then
 * elected, and their task managers, shuffle workers and clients follow the leader.
 */
export function isHighAvailabilityModeActivated(configuration: ReadableConfig): boolean {
  return configuration.get(HighAvailabilityOptions.HA_MODE).trim().toLowerCase() !== "none";
}

/**
 * The high-availability services `high-availability.type` names (Flink's
 * `HighAvailabilityServicesUtils`): `none` (Flink's `NONE`; any case) is the embedded services, one
 * job manager and nothing to install; `etcd` is `@sluice/ha-etcd`; anything else is a
 * `HighAvailabilityServicesFactory` as `<module>#<export>`, loaded like the shuffle plugin (from
 * the application, not from Sluice's own dependencies).
 *
 * @throws the loader's errors (`SLUICE_ERR_PLUGIN_*`) naming `high-availability.type`; the
 *   factory's (ConfigurationError for a missing key, HighAvailabilityUnavailableError when its
 *   coordination service cannot be reached).
 */
export async function loadHighAvailabilityServices(
  configuration: ReadableConfig & { readonly configDir?: string | undefined },
  context: HighAvailabilityServicesContext = {},
  loader: PluginLoaderOptions = {},
): Promise<HighAvailabilityServices> {
  if (!isHighAvailabilityModeActivated(configuration)) {
    return new EmbeddedHighAvailabilityServices(context.jobManagerAddress);
  }
  const type = configuration.get(HighAvailabilityOptions.HA_MODE).trim();
  if (type === "") {
    throw new ConfigurationError(
      `${HighAvailabilityOptions.HA_MODE.key} is empty; expected ${KIND.description}`,
    );
  }
  const { factory } = await loadPlugin(configuration, KIND, loader);
  return factory.createHAServices(configuration, context);
}
