import { readFileSync } from "node:fs";
import path from "node:path";
import { ConfigurationError } from "@sluice/core";
import {
  ALL_OPTIONS,
  type ConfigOption,
  findRawValue,
  parseResolvedValue,
  type ReadableConfig,
  type ResolvedRawValue,
} from "@sluice/runtime-api";
import { parse as parseYaml } from "yaml";
import { parseDynamicProperties } from "./dynamic-properties.js";
import { flattenYamlDocument } from "./flatten.js";
import { knownKeysOf, suggestKey } from "./unknown-keys.js";

/** The `type` of every warning the configuration emits through `process.emitWarning`. */
export const CONFIG_WARNING_TYPE = "SluiceConfigWarning";

/** Where a configuration lives on disk; the loader resolves plugin paths against `configDir`. */
export interface ConfigurationLocation {
  /** The folder of the config file (relative plugin paths and bare names resolve from here). */
  readonly configDir?: string | undefined;
  /** The config file itself, for messages. */
  readonly configFile?: string | undefined;
}

/** How loading reports keys no option knows. */
export interface UnknownKeyCheck {
  /**
   * The options whose keys (and fallback keys) are known; default `ALL_OPTIONS`. The options of
   * the plugins loaded later for this configuration are added to them (see
   * {@link Configuration.reportUnknownKeys}).
   */
  readonly knownOptions?: readonly ConfigOption<unknown>[];
  /**
   * Report the keys read from the file and the `-D` arguments that no option knows, in one
   * `SluiceConfigWarning` (default true). The report waits until the plugins are loaded, since a
   * plugin declares its own keys: the first `TaskExecutor`, `JobDeployer`, `JobManager` or
   * `TaskManager` started with this configuration emits it once it loaded them (or
   * {@link Configuration.reportUnknownKeys}, for a program that starts none).
   */
  readonly warnUnknownKeys?: boolean;
}

/** Options of {@link Configuration.load}. */
export interface LoadConfigurationOptions extends UnknownKeyCheck {
  /** A `config.yaml` to read first (optional). */
  readonly configFile?: string;
  /** Command-line arguments; their `-D key=value` overrides win over the file. */
  readonly args?: readonly string[];
  /** The folder to resolve plugins from when there is no config file (default: none → cwd). */
  readonly configDir?: string;
}

interface Entry {
  readonly value: unknown;
  /** Where the value came from: a file path, "-D" or "set". */
  readonly origin: string;
}

/**
 * The unknown-key report of a loaded configuration, waiting for its plugins: it is emitted once
 * they are loaded, because a plugin declares its own keys (`configOptions`) and no configuration
 * file can be checked before the plugins it names are known. Copies (`clone()`) share it.
 */
interface PendingUnknownKeyReport {
  /** The keys read from the file and the `-D` arguments: the ones the report checks. */
  readonly keys: Set<string>;
  /** Sluice's options (or the loader's `knownOptions`). */
  readonly knownOptions: readonly ConfigOption<unknown>[];
  /** The options of every plugin loaded for this configuration or a copy of it. */
  readonly pluginOptions: ConfigOption<unknown>[];
  reported: boolean;
}

/**
 * Sluice's configuration: raw values by dotted key, read through typed {@link ConfigOption}s
 * (Flink's `Configuration`). Values come from a `config.yaml` (flat dotted keys or nested maps),
 * from `-D key=value` command-line overrides (which win), and from `set`. They stay raw until
 * read: `get(option)` parses with the option's type (memory sizes to bytes, durations to
 * milliseconds), falls back to the option's fallback keys, then to its default.
 *
 * Invalid values fail with a `ConfigurationError` (`SLUICE_ERR_CONFIG`) that names the key, the
 * value, where it was set and what was expected. Keys no option knows are reported (see
 * {@link Configuration.unknownKeys}), never silently ignored.
 */
export class Configuration implements ReadableConfig {
  private readonly entries = new Map<string, Entry>();
  private readonly warnedDeprecated = new Set<string>();
  private unknownKeyReport: PendingUnknownKeyReport | undefined;
  /** The folder of the config file this configuration was loaded from, if any. */
  readonly configDir: string | undefined;
  /** The config file this configuration was loaded from, if any. */
  readonly configFile: string | undefined;

  /**
   * @param entries initial raw values by key (origin "set").
   * @param location where the configuration lives, for the plugin loader.
   */
  constructor(
    entries?: Readonly<Record<string, unknown>> | Iterable<readonly [string, unknown]>,
    location: ConfigurationLocation = {},
  ) {
    this.configDir =
      location.configDir === undefined ? undefined : path.resolve(location.configDir);
    this.configFile =
      location.configFile === undefined ? undefined : path.resolve(location.configFile);
    if (entries !== undefined) {
      const pairs = Symbol.iterator in entries ? entries : Object.entries(entries);
      for (const [key, value] of pairs as Iterable<readonly [string, unknown]>)
        this.setEntry(key, value, "set");
    }
  }

  /**
   * Reads a `config.yaml` from text.
   *
   * @param options.source names the text in messages (default "YAML").
   * @throws ConfigurationError for invalid YAML, duplicate keys or keys without value.
   */
  static fromYamlString(
    text: string,
    options: ConfigurationLocation & UnknownKeyCheck & { readonly source?: string } = {},
  ): Configuration {
    const source = options.source ?? options.configFile ?? "YAML";
    let document: unknown;
    try {
      document = parseYaml(text, { uniqueKeys: true, prettyErrors: true });
    } catch (error) {
      throw new ConfigurationError(`${source} is not valid YAML: ${(error as Error).message}`, {
        cause: error,
      });
    }
    const configuration = new Configuration(undefined, options);
    for (const [key, value] of flattenYamlDocument(document, source)) {
      configuration.setEntry(key, value, source);
    }
    if (options.warnUnknownKeys ?? true) configuration.deferUnknownKeyReport(options.knownOptions);
    return configuration;
  }

  /**
   * Reads a `config.yaml` file. The configuration remembers the file's folder as `configDir`.
   *
   * @throws ConfigurationError when the file cannot be read or is invalid.
   */
  static fromYamlFile(file: string, options: UnknownKeyCheck = {}): Configuration {
    const absolute = path.resolve(file);
    let text: string;
    try {
      text = readFileSync(absolute, "utf8");
    } catch (error) {
      throw new ConfigurationError(
        `cannot read config file ${absolute}: ${(error as Error).message}`,
        { cause: error },
      );
    }
    return Configuration.fromYamlString(text, {
      ...options,
      configFile: absolute,
      configDir: path.dirname(absolute),
    });
  }

  /**
   * Loads a configuration the way a Sluice process starts: the config file (if any), then the
   * `-D` overrides from `args`, then a check that every known option that is set has a valid
   * value (fail fast at start-up, not at first use). Keys no option knows are reported in one
   * warning once the plugins are loaded (see {@link UnknownKeyCheck.warnUnknownKeys}).
   */
  static load(options: LoadConfigurationOptions = {}): Configuration {
    const quiet = { ...options, warnUnknownKeys: false };
    const configuration =
      options.configFile === undefined
        ? new Configuration(undefined, { configDir: options.configDir })
        : Configuration.fromYamlFile(options.configFile, quiet);
    if (options.args !== undefined) configuration.applyDynamicProperties(options.args, quiet);
    if (options.warnUnknownKeys ?? true) configuration.deferUnknownKeyReport(options.knownOptions);
    configuration.validate(options.knownOptions);
    return configuration;
  }

  /**
   * Applies Flink-style `-D key=value` / `-Dkey=value` overrides from command-line arguments;
   * they replace values from the config file. Arguments that are not `-D` overrides are ignored
   * (use `parseDynamicProperties` to get them). Their unknown keys join the report that waits for
   * the plugins, when there is one; else they are reported now.
   *
   * @throws ConfigurationError for a malformed `-D` argument.
   */
  applyDynamicProperties(args: readonly string[], options: UnknownKeyCheck = {}): this {
    const { properties } = parseDynamicProperties(args);
    for (const [key, value] of properties) this.setEntry(key, value, "-D");
    const pending = this.unknownKeyReport;
    if (pending !== undefined && !pending.reported) {
      for (const [key] of properties) pending.keys.add(key);
    } else if (options.warnUnknownKeys ?? true) {
      const known = knownKeysOf(options.knownOptions ?? ALL_OPTIONS);
      const unknown = [...new Set(properties.map(([key]) => key))].filter((key) => !known.has(key));
      this.emitUnknownKeysWarning(unknown, known);
    }
    return this;
  }

  get<T>(option: ConfigOption<T>): T {
    const found = this.find(option);
    return found === undefined ? option.defaultValue : this.parse(option, found);
  }

  getOptional<T>(option: ConfigOption<T>): Exclude<T, undefined> | undefined {
    const found = this.find(option);
    return found === undefined ? undefined : this.parse(option, found);
  }

  contains(option: ConfigOption<unknown>): boolean {
    return this.find(option) !== undefined;
  }

  /** Sets an option to a typed value (e.g. bytes for a memory option), or a key to a raw value. */
  set<T>(option: ConfigOption<T>, value: Exclude<T, undefined>): this;
  set(key: string, value: unknown): this;
  set(keyOrOption: string | ConfigOption<unknown>, value: unknown): this {
    const key = typeof keyOrOption === "string" ? keyOrOption : keyOrOption.key;
    if (value === undefined || value === null) {
      throw new ConfigurationError(
        `cannot set config key "${key}" to ${String(value)}; use remove()`,
      );
    }
    this.setEntry(key, value, "set");
    return this;
  }

  /** Removes a key (an option's own key only); true when it was set. */
  remove(keyOrOption: string | ConfigOption<unknown>): boolean {
    return this.entries.delete(typeof keyOrOption === "string" ? keyOrOption : keyOrOption.key);
  }

  /** The raw value of a key as loaded (YAML scalar, `-D` string or set value), or `undefined`. */
  getRaw(key: string): unknown {
    return this.entries.get(key)?.value;
  }

  /** True when the key itself is set (fallback keys are not consulted). */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** Where a key's value came from: the config file's path, `"-D"` or `"set"`. */
  originOf(key: string): string | undefined {
    return this.entries.get(key)?.origin;
  }

  /** Every key that is set, in the order first set. */
  keys(): string[] {
    return [...this.entries.keys()];
  }

  /** A plain object of every key's raw value. */
  toObject(): Record<string, unknown> {
    return Object.fromEntries([...this.entries].map(([key, entry]) => [key, entry.value]));
  }

  /**
   * An independent copy of the values (same location). It shares this configuration's
   * unknown-key report: a copy handed to a component (a task manager's configuration with the job
   * manager's keys added) reports the keys loaded here, once for both.
   */
  clone(): Configuration {
    const copy = new Configuration(undefined, {
      configDir: this.configDir,
      configFile: this.configFile,
    });
    for (const [key, entry] of this.entries) copy.entries.set(key, entry);
    copy.unknownKeyReport = this.unknownKeyReport;
    return copy;
  }

  /** The keys that are set but that no option in `knownOptions` (own or fallback key) knows. */
  unknownKeys(knownOptions: readonly ConfigOption<unknown>[] = ALL_OPTIONS): string[] {
    const known = knownKeysOf(knownOptions);
    return this.keys().filter((key) => !known.has(key));
  }

  /**
   * Emits one `SluiceConfigWarning` listing the unknown keys (with a "did you mean" for likely
   * typos), when there are any; returns them. It settles the report `load` deferred: a component
   * started later does not report again.
   */
  warnUnknownKeys(knownOptions: readonly ConfigOption<unknown>[] = ALL_OPTIONS): string[] {
    if (this.unknownKeyReport !== undefined) this.unknownKeyReport.reported = true;
    const known = knownKeysOf(knownOptions);
    const unknown = this.keys().filter((key) => !known.has(key));
    this.emitUnknownKeysWarning(unknown, known);
    return unknown;
  }

  /**
   * Declares the options of a plugin loaded for this configuration (a shuffle plugin's
   * `configOptions`): the unknown-key report does not name their keys. The plugin loader calls it.
   */
  addPluginOptions(options: readonly ConfigOption<unknown>[]): this {
    this.unknownKeyReport?.pluginOptions.push(...options);
    return this;
  }

  /**
   * Emits the unknown-key warning that `load` (or `fromYamlFile`, `fromYamlString`) deferred
   * until the plugins are loaded, once for this configuration and its copies: the keys read from
   * the file and the `-D` arguments that neither Sluice nor a plugin declared with
   * {@link Configuration.addPluginOptions} knows, each with a likely fix. `TaskExecutor.start`,
   * `JobDeployer.start` (and so `JobManager.start`) and `TaskManager.start` call it once their
   * plugins are loaded; a program that starts none of them calls it itself.
   *
   * @returns the keys reported; empty when nothing was deferred or it was reported already.
   */
  reportUnknownKeys(): string[] {
    const pending = this.unknownKeyReport;
    if (pending === undefined || pending.reported) return [];
    pending.reported = true;
    const known = knownKeysOf([...pending.knownOptions, ...pending.pluginOptions]);
    const unknown = [...pending.keys].filter((key) => this.has(key) && !known.has(key));
    this.emitUnknownKeysWarning(unknown, known);
    return unknown;
  }

  /**
   * Parses every option of `options` that is set, so an invalid value fails now.
   *
   * @throws ConfigurationError for the first invalid value.
   */
  validate(options: readonly ConfigOption<unknown>[] = ALL_OPTIONS): void {
    for (const option of options) {
      const found = this.find(option);
      if (found !== undefined) this.parse(option, found);
    }
  }

  toString(): string {
    return `Configuration(${this.entries.size} keys${this.configFile === undefined ? "" : ` from ${this.configFile}`})`;
  }

  /** Keeps the keys set so far for one report, emitted once the plugins are loaded. */
  private deferUnknownKeyReport(
    knownOptions: readonly ConfigOption<unknown>[] = ALL_OPTIONS,
  ): void {
    this.unknownKeyReport = {
      keys: new Set(this.entries.keys()),
      knownOptions,
      pluginOptions: [],
      reported: false,
    };
  }

  private setEntry(key: string, value: unknown, origin: string): void {
    if (typeof key !== "string" || key.trim() === "") {
      throw new ConfigurationError(
        `config keys must be non-empty strings, got ${JSON.stringify(key)} (from ${origin})`,
      );
    }
    this.entries.set(key, { value, origin });
  }

  private find(option: ConfigOption<unknown>): ResolvedRawValue | undefined {
    return findRawValue(option, (key) => this.entries.get(key)?.value);
  }

  private parse<T>(option: ConfigOption<T>, found: ResolvedRawValue): Exclude<T, undefined> {
    let value: Exclude<T, undefined>;
    try {
      value = parseResolvedValue(option, found);
    } catch (error) {
      const origin = this.entries.get(found.key)?.origin;
      if (error instanceof ConfigurationError && origin !== undefined) {
        const where =
          origin === "-D" ? "set by -D" : origin === "set" ? "set in code" : `set in ${origin}`;
        throw new ConfigurationError(`${error.message} (${where})`);
      }
      throw error;
    }
    if (found.fallback?.isDeprecated && !this.warnedDeprecated.has(found.key)) {
      this.warnedDeprecated.add(found.key);
      process.emitWarning(`config key "${found.key}" is deprecated; use "${option.key}" instead`, {
        type: CONFIG_WARNING_TYPE,
        code: "SLUICE_CONFIG_DEPRECATED_KEY",
      });
    }
    return value;
  }

  private emitUnknownKeysWarning(unknown: readonly string[], known: Set<string>): void {
    if (unknown.length === 0) return;
    const described = unknown.map((key) => {
      const suggestion = suggestKey(key, known);
      const origin = this.entries.get(key)?.origin;
      const from =
        origin === undefined
          ? ""
          : origin === "-D"
            ? " (from -D)"
            : origin === "set"
              ? ""
              : ` (from ${origin})`;
      return suggestion === undefined
        ? `"${key}"${from}`
        : `"${key}"${from}, did you mean "${suggestion}"?`;
    });
    process.emitWarning(
      `unknown config key${unknown.length === 1 ? "" : "s"} (no Sluice option reads ${unknown.length === 1 ? "it" : "them"}): ${described.join("; ")}`,
      { type: CONFIG_WARNING_TYPE, code: "SLUICE_CONFIG_UNKNOWN_KEYS" },
    );
  }
}
