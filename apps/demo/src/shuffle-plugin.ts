import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import {
  type Configuration,
  type LoadedShuffleServiceFactory,
  loadShuffleServiceFactoryWithInfo,
  parseFactoryReference,
  SHUFFLE_SERVICE_ALIASES,
} from "@sluice/runtime";
import { ShuffleServiceOptions } from "@sluice/runtime-api";

/** `shuffle-service-factory.class`. */
export const SHUFFLE_KEY = ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS.key;

/**
 * The demo application's own folder (`apps/demo`): its package.json lists the bundled plugins,
 * as a Flink user puts the shuffle jar on the class path. `src/` and `dist/` both sit one level
 * below it.
 */
export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/**
 * The configured plugin in its full `<module>#<export>` form (aliases expanded), for reports:
 * `tcp` → `@sluice/shuffle-tcp#TcpShuffleServiceFactory`.
 */
export function describeShuffle(configuration: Configuration): string {
  const value = configuration.get(ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS);
  try {
    const reference = parseFactoryReference(value, SHUFFLE_KEY, SHUFFLE_SERVICE_ALIASES);
    return reference.exportName === undefined
      ? reference.specifier
      : `${reference.specifier}#${reference.exportName}`;
  } catch {
    return value;
  }
}

/**
 * Loads the configured shuffle plugin through the runtime's ShuffleServiceLoader, exactly as
 * every process of the job does (the coordinator for its ShuffleMaster, each task manager for
 * its ShuffleEnvironment).
 *
 * The loader resolves package names from the config file's folder and the working directory.
 * `pnpm demo` runs in the repository root, whose node_modules does not hold the plugins: they are
 * dependencies of the demo application (apps/demo), as a Flink user puts the shuffle jar on the
 * class path. So the application's folder is searched too, and named in the error if that fails.
 */
export async function loadShufflePlugin(
  configuration: Configuration,
): Promise<LoadedShuffleServiceFactory> {
  return loadShuffleServiceFactoryWithInfo(configuration, { applicationDirs: [APP_DIR] });
}

/** Which shuffle plugin a process loaded, as the job manager compares it with its own. */
export interface PluginIdentity {
  /** `<module>#<export>`, aliases expanded. */
  readonly reference: string;
  /** `name@version` of the package the module belongs to, when it has a package.json. */
  readonly package: string | null;
}

/** The identity of the plugin `loaded` for `configuration`. */
export function pluginIdentity(
  configuration: Configuration,
  loaded: LoadedShuffleServiceFactory,
): PluginIdentity {
  return { reference: describeShuffle(configuration), package: packageOf(loaded.file) };
}

/** `name@version` of the nearest package.json above `file` that has a name. */
function packageOf(file: string): string | null {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, "package.json");
    if (existsSync(manifest)) {
      const { name, version } = JSON.parse(readFileSync(manifest, "utf8")) as {
        name?: unknown;
        version?: unknown;
      };
      if (typeof name === "string") return `${name}@${String(version)}`;
    }
    if (path.dirname(dir) === dir) return null;
  }
}

/** The demo application's version: job manager and task managers must run the same one. */
export const APP_VERSION: string = (
  JSON.parse(readFileSync(path.join(APP_DIR, "package.json"), "utf8")) as { version: string }
).version;
