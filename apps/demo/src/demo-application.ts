import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ErrorCodes } from "@sluice/core";
import { ShuffleServiceOptions } from "@sluice/runtime-api";

/** `shuffle-service-factory.class`. */
export const SHUFFLE_KEY = ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS.key;

/**
 * The demo application's own folder (`apps/demo`): its package.json lists the bundled plugins,
 * as a Flink user puts the shuffle jar on the class path. `src/` and `dist/` both sit one level
 * below it. The loader resolves package names from the config file's folder and the working
 * directory; `pnpm demo` runs in the repository root, whose node_modules does not hold the
 * plugins, so every process of the demo searches this folder too.
 */
export const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The demo application's version: job manager and task managers must run the same one. */
export const APP_VERSION: string = (
  JSON.parse(readFileSync(path.join(APP_DIR, "package.json"), "utf8")) as { version: string }
).version;

/**
 * The error codes that mean the user's input is wrong, not the run: a bad configuration, or a
 * shuffle plugin that cannot be found, loaded or used. The demo exits 2 for them, as for a bad
 * command line.
 */
const USAGE_ERROR_CODES: ReadonlySet<string> = new Set([
  ErrorCodes.CONFIG,
  ErrorCodes.PLUGIN_NOT_FOUND,
  ErrorCodes.PLUGIN_EXPORT_MISSING,
  ErrorCodes.PLUGIN_INVALID,
  ErrorCodes.PLUGIN_INSTANTIATION,
  ErrorCodes.PLUGIN_CONTRACT,
]);

/** Whether `error` is a bad configuration or shuffle plugin (exit code 2). */
export function isUsageError(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && USAGE_ERROR_CODES.has(code);
}
