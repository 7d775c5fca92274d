import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ConfigurationError, describeValue, typeName } from "@sluice/core";
import type { ConfigOption, ReadableConfig } from "@sluice/runtime-api";
import {
  PluginExportMissingError,
  PluginInstantiationError,
  PluginInvalidError,
  PluginNotFoundError,
} from "./errors.js";
import { type FactoryReference, parseFactoryReference } from "./factory-reference.js";
import {
  DEFAULT_IMPORT_CONDITIONS,
  resolveBareSpecifier,
  resolvePackageEntry,
  userConditions,
} from "./module-resolver.js";
import { isDirectory, isFile } from "./path-kind.js";

/**
 * The configuration the loader reads: any {@link ReadableConfig}; when it is `@sluice/runtime`'s
 * `Configuration`, its `configDir` (the config file's folder) and `originOf` are used too,
 * `keys`/`getRaw` let the metric system find the reporters configured under
 * `metrics.reporter.<name>.*` (without them, only those listed in `metrics.reporters`), and
 * `addPluginOptions`/`reportUnknownKeys` let the components that load plugins report the keys
 * that neither Sluice nor a loaded plugin knows, once the plugins are known.
 */
export type LoaderConfiguration = ReadableConfig & {
  readonly configDir?: string | undefined;
  originOf?(key: string): string | undefined;
  keys?(): readonly string[];
  getRaw?(key: string): unknown;
  addPluginOptions?(options: readonly ConfigOption<unknown>[]): unknown;
  reportUnknownKeys?(): unknown;
};

/** Where the loader looks for plugin modules (shared by every kind of plugin). */
export interface PluginLoaderOptions {
  /** The working directory to resolve from (default `process.cwd()`). */
  readonly cwd?: string;
  /** The config file's folder (default: the configuration's `configDir`). */
  readonly configDir?: string;
  /**
   * The application's own folders (whose package.json lists the plugins), searched for package
   * names after the config file's folder and the working directory — for an application started
   * from another directory, e.g. by a workspace script.
   */
  readonly applicationDirs?: readonly string[];
  /**
   * Extra package export conditions (added to `node`, `import`, `module-sync`, `default` and the
   * process's own `--conditions`), e.g. `["@sluice/source"]` to load a workspace plugin from
   * source under a TypeScript-aware runner.
   */
  readonly conditions?: readonly string[];
}

/**
 * A kind of plugin the runtime loads by class name: the key that names it, how to recognise its
 * factory, and the words error messages use. The shuffle (`shuffle-service-factory.class`) and
 * metric reporters (`metrics.reporter.<name>.factory.class`) are the two kinds.
 */
export interface PluginKind<F> {
  /** The interface the export must implement, for messages (`ShuffleServiceFactory`). */
  readonly name: string;
  /** The option whose value names the plugin (`<module>#<export>` or an alias). */
  readonly option: ConfigOption<string | undefined>;
  /**
   * The value used when the option is not set, before the option's own default; without either,
   * an unset option is an error.
   */
  readonly defaultValue?: string;
  /** What the option expects, for the message when it is unset and there is no default. */
  readonly description: string;
  /** Short names for values (e.g. `tcp`). */
  readonly aliases: Readonly<Record<string, string>>;
  /** The `Symbol.for` key of the kind's brand, for messages. */
  readonly brandKey: string;
  /** True when the (constructed) export is a factory of this kind. */
  isFactory(value: unknown): value is F;
  /** The required members `value` lacks, for messages. */
  missingMembers(value: unknown): string[];
}

/** A loaded plugin factory and where it came from. */
export interface LoadedPlugin<F> {
  /** The factory instance. */
  readonly factory: F;
  /** The configured value (or the default). */
  readonly value: string;
  /** The module file that was imported. */
  readonly file: string;
  /** The export used (`default` for the default export). */
  readonly exportName: string;
}

/**
 * Describes what a plugin module exported, for "not a factory" errors: objects with the members
 * they do have (so a misspelt method shows), anything else as core's `describeValue` does.
 */
function describeExport(value: unknown): string {
  if (typeof value !== "object" || value === null) return describeValue(value);
  const members = new Set<string>();
  for (
    let o: object | null = value;
    o !== null && o !== Object.prototype;
    o = Object.getPrototypeOf(o)
  ) {
    for (const name of Object.getOwnPropertyNames(o)) if (name !== "constructor") members.add(name);
  }
  const name = typeName(value);
  const what = name === "Object" ? "an object" : `an instance of class ${name}`;
  return members.size === 0
    ? `${what} without members`
    : `${what} with members ${[...members].sort().join(", ")}`;
}

function isConstructor(value: unknown): value is new () => unknown {
  // Arrow functions, methods and async functions have no prototype and cannot be constructed.
  return typeof value === "function" && Object.hasOwn(value, "prototype");
}

/**
 * Loads the plugin factory a configuration names (Flink's `ShuffleServiceLoader` and reporter
 * setup, as one path).
 *
 * Resolution of `<module>#<export>` (no `#`: the default export; aliases from `kind`):
 * - a package name (`my-shuffle`, `@acme/shuffle/sub`) resolves from the application: the config
 *   file's folder first, then the working directory, walking up through `node_modules` and honouring
 *   the package's `exports` (`import` conditions). Never from `@sluice/runtime`'s own
 *   dependencies: the application lists the plugin, as a Flink user puts a jar on the class path;
 * - `./x.js`, `../x.js` resolve from the config file's folder (the working directory without one);
 * - absolute paths and `file:` URLs are used as they are; a folder is read as a package.
 *
 * The export is a class (constructed with no arguments) or an object, recognised by
 * `kind.isFactory` (the kind's brand or its members).
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) for a malformed or missing value.
 * @throws PluginNotFoundError (`SLUICE_ERR_PLUGIN_NOT_FOUND`) when the module is not found.
 * @throws PluginExportMissingError (`SLUICE_ERR_PLUGIN_EXPORT_MISSING`) when the export is absent.
 * @throws PluginInvalidError (`SLUICE_ERR_PLUGIN_INVALID`) when it is no factory of the kind.
 * @throws PluginInstantiationError (`SLUICE_ERR_PLUGIN_INSTANTIATION`) when loading the module
 *   or the constructor threw.
 */
export async function loadPlugin<F>(
  configuration: LoaderConfiguration,
  kind: PluginKind<F>,
  options: PluginLoaderOptions = {},
): Promise<LoadedPlugin<F>> {
  const option = kind.option;
  const configured = configuration.getOptional(option);
  const value = configured ?? kind.defaultValue ?? option.defaultValue;
  if (value === undefined) {
    throw new ConfigurationError(
      `config key "${option.key}" is not set; expected ${kind.description}`,
    );
  }
  const reference = parseFactoryReference(value, option.key, kind.aliases);
  const cwd = path.resolve(options.cwd ?? process.cwd());
  const configDir = options.configDir ?? configuration.configDir;
  const subject = describeSubject(configuration, option.key, configured === undefined, reference);
  const conditions = new Set([
    ...DEFAULT_IMPORT_CONDITIONS,
    ...userConditions(),
    ...(options.conditions ?? []),
  ]);

  const file = locateModule(
    reference,
    subject,
    cwd,
    configDir === undefined ? undefined : path.resolve(configDir),
    conditions,
    (options.applicationDirs ?? []).map((dir) => path.resolve(dir)),
  );
  const moduleLabel = `module ${file}`;

  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new PluginInstantiationError(
      `${subject}: loading ${moduleLabel} threw: ${(error as Error)?.message ?? String(error)}`,
      { cause: error },
    );
  }

  const exportName = reference.exportName ?? "default";
  const exported = findExport(namespace, exportName);
  if (!exported.found) {
    const names = Object.keys(namespace).sort();
    const has = names.length === 0 ? "it has no exports" : `it exports: ${names.join(", ")}`;
    const hint =
      reference.exportName === undefined && names.length > 0
        ? `; name one with "${reference.specifier}#${names.find((n) => n !== "default") ?? names[0]}"`
        : "";
    throw new PluginExportMissingError(
      `${subject}: ${moduleLabel} has no ${reference.exportName === undefined ? "default export" : `export named "${exportName}"`}; ${has}${hint}`,
    );
  }

  const exportLabel = `export "${exportName}" of ${moduleLabel}`;
  let factory: unknown = exported.value;
  if (typeof factory === "function") {
    if (!isConstructor(factory)) {
      throw new PluginInvalidError(
        `${subject}: ${exportLabel} is ${describeExport(factory)} that cannot be called with new; export a ${kind.name} class with a no-argument constructor, or a factory object`,
      );
    }
    const ctor: new () => unknown = factory;
    try {
      factory = new ctor();
    } catch (error) {
      throw new PluginInstantiationError(
        `${subject}: new ${ctor.name || "(anonymous class)"}() (${exportLabel}) threw: ${(error as Error)?.message ?? String(error)}`,
        { cause: error },
      );
    }
  }
  if (typeof factory !== "object" || factory === null || !kind.isFactory(factory)) {
    const missing = kind.missingMembers(factory);
    const origin =
      typeof exported.value === "function" ? `an instance of ${exportLabel}` : exportLabel;
    throw new PluginInvalidError(
      `${subject}: ${origin} is not a ${kind.name}: it lacks ${missing.map((m) => `${m}()`).join(" and ")} and the brand Symbol.for("${kind.brandKey}"); found ${describeExport(factory)}`,
    );
  }
  return { factory, value, file, exportName };
}

function describeSubject(
  configuration: LoaderConfiguration,
  key: string,
  isDefault: boolean,
  reference: FactoryReference,
): string {
  let text = `${key} = ${JSON.stringify(reference.value)}`;
  if (reference.alias !== undefined) {
    text += ` (alias of "${reference.specifier}${reference.exportName === undefined ? "" : `#${reference.exportName}`}")`;
  }
  if (isDefault) {
    text += " (the default)";
  } else {
    const origin = configuration.originOf?.(key);
    if (origin === "-D") text += " (set by -D)";
    else if (origin !== undefined && origin !== "set") text += ` (set in ${origin})`;
  }
  return text;
}

function locateModule(
  reference: FactoryReference,
  subject: string,
  cwd: string,
  configDir: string | undefined,
  conditions: ReadonlySet<string>,
  applicationDirs: readonly string[],
): string {
  if (reference.kind === "bare") {
    const fromDirs = [
      ...new Set([configDir, cwd, ...applicationDirs].filter((d): d is string => d !== undefined)),
    ];
    const resolution = resolveBareSpecifier(reference.specifier, fromDirs, conditions);
    if (resolution.found) return resolution.file;
    const where = resolution.searched
      .map(({ from, candidates }) => {
        const label =
          from === configDir
            ? "the config file's folder"
            : from === cwd
              ? "the working directory"
              : "the application folder";
        return `from ${label} ${from} (${candidates.join(", ")})`;
      })
      .join(" and ");
    const found =
      resolution.problem ??
      "none of these folders exists. Add the plugin package to the application's dependencies (the runtime does not load plugins from its own dependencies), or name the module by path.";
    throw new PluginNotFoundError(
      `${subject}: cannot find package "${reference.specifier}"${where === "" ? "" : `; looked ${where}`}; ${found}`,
    );
  }

  let file: string;
  let how: string;
  if (reference.kind === "file-url") {
    try {
      file = fileURLToPath(reference.specifier);
    } catch (error) {
      throw new PluginNotFoundError(
        `${subject}: ${JSON.stringify(reference.specifier)} is not a valid file: URL (${(error as Error).message})`,
        { cause: error },
      );
    }
    how = "the file: URL";
  } else if (reference.kind === "relative") {
    const base = configDir ?? cwd;
    file = path.resolve(base, reference.specifier);
    how = `relative to ${configDir === undefined ? "the working directory" : "the config file's folder"} ${base}`;
  } else {
    file = path.resolve(reference.specifier);
    how = "the absolute path";
  }
  if (isDirectory(file)) {
    const entry = resolvePackageEntry(file, ".", conditions);
    if ("problem" in entry) {
      throw new PluginNotFoundError(
        `${subject}: ${file} (${how}) is a folder, but ${entry.problem}`,
      );
    }
    return entry.file;
  }
  if (!isFile(file)) {
    const parent = path.dirname(file);
    const found = isDirectory(parent)
      ? `its folder ${parent} has no such file`
      : `the folder ${parent} does not exist`;
    throw new PluginNotFoundError(`${subject}: cannot find module ${file} (${how}); ${found}`);
  }
  return file;
}

function findExport(
  namespace: Record<string, unknown>,
  name: string,
): { readonly found: true; readonly value: unknown } | { readonly found: false } {
  if (Object.hasOwn(namespace, name)) return { found: true, value: namespace[name] };
  // A CommonJS plugin whose named exports Node could not detect statically: look inside
  // module.exports, which import() exposes as the default export.
  const commonJs = namespace.default;
  if (
    name !== "default" &&
    (typeof commonJs === "object" || typeof commonJs === "function") &&
    commonJs !== null
  ) {
    if (Object.hasOwn(commonJs, name))
      return { found: true, value: (commonJs as Record<string, unknown>)[name] };
  }
  return { found: false };
}
