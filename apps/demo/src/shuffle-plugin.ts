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
    // Only a label for reports: the loader reports a malformed value with the full reason.
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
