import type { ConfigOption, ReadableConfig } from "@sluice/runtime-api";

/**
 * `base` with some keys replaced: how a shuffle worker hands its own settings (ports, memory) to
 * the network shuffle environment it stores partitions in, under the keys that environment reads.
 */
export function overlayConfig(
  base: ReadableConfig,
  overrides: Readonly<Record<string, unknown>>,
): ReadableConfig {
  const has = (option: ConfigOption<unknown>) => Object.hasOwn(overrides, option.key);
  return {
    get<T>(option: ConfigOption<T>): T {
      return has(option) ? option.parse(overrides[option.key]) : base.get(option);
    },
    getOptional<T>(option: ConfigOption<T>): Exclude<T, undefined> | undefined {
      return has(option) ? option.parse(overrides[option.key]) : base.getOptional(option);
    },
    contains(option: ConfigOption<unknown>): boolean {
      return has(option) || base.contains(option);
    },
  };
}
