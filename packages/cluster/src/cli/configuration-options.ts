import { Configuration } from "@sluice/runtime";
import {
  type ConfigurationAndShufflePlugin,
  loadConfigurationAndShufflePlugin,
} from "@sluice/runtime/plugin";
import { type Command, Option } from "commander";
import { DISTRIBUTION_LOADER } from "./distribution.js";

/** The options every `sluice` command that reads a configuration takes. */
export interface ConfigurationFlags {
  /** `--config <file>`: a `config.yaml` of flat, dotted keys. */
  readonly config?: string;
  /** `-D key=value`, repeated: each wins over the file (Flink's dynamic properties). */
  readonly D: readonly string[];
}

/** Adds `--config` and `-D` to `command`. */
export function withConfigurationOptions(command: Command): Command {
  return command
    .addOption(
      new Option("-c, --config <file>", "a config.yaml of flat, dotted keys (Flink's keys)"),
    )
    .addOption(
      new Option("-D <key=value>", "set a configuration key, winning over the file (repeatable)")
        .argParser((value: string, previous: string[]) => [...previous, value])
        .default([], "none"),
    );
}

/** The flags as `Configuration.load` takes them. */
function args(flags: ConfigurationFlags): string[] {
  return flags.D.map((pair) => `-D${pair}`);
}

/**
 * Reads the configuration a `sluice` process runs with and loads its shuffle plugin (from the
 * config file's folder, the working directory, then the plugins this distribution brings); one
 * warning names the keys neither Sluice nor the plugin knows, and every set value is checked.
 *
 * @throws ConfigurationError for an unreadable file, a malformed `-D` or an invalid value; the
 *   loader's errors when the plugin cannot be loaded.
 */
export function loadProcessConfiguration(
  flags: ConfigurationFlags,
  overrides: Readonly<Record<string, unknown>> = {},
): Promise<ConfigurationAndShufflePlugin> {
  return loadConfigurationAndShufflePlugin({
    ...(flags.config === undefined ? {} : { configFile: flags.config }),
    args: args(flags),
    overrides,
    loader: DISTRIBUTION_LOADER,
  });
}

/**
 * The configuration of a command that loads no shuffle plugin (a REST client, a shuffle worker).
 *
 * @param warnUnknownKeys - false when the command checks the keys itself, against options of its
 *   own.
 * @throws ConfigurationError for an unreadable file, a malformed `-D` or an invalid value.
 */
export function loadClientConfiguration(
  flags: ConfigurationFlags,
  warnUnknownKeys = true,
): Configuration {
  return Configuration.load({
    ...(flags.config === undefined ? {} : { configFile: flags.config }),
    args: args(flags),
    warnUnknownKeys,
  });
}
