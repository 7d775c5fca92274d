import path from "node:path";
import { fileURLToPath } from "node:url";
import type { PluginLoaderOptions } from "@sluice/runtime";

/**
 * This package's folder. The `sluice` processes are a distribution, as Flink's `lib/` folder is:
 * the plugins @sluice/cluster depends on (the TCP, WebSocket and remote shuffles, etcd HA, the
 * Prometheus reporter) resolve from here after the config file's folder and the working
 * directory, so `shuffle-service-factory.class: ws` works without the application listing the
 * plugin, and an application's own plugin of the same name wins.
 */
export const DISTRIBUTION_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** Where the `sluice` processes load plugins from. */
export const DISTRIBUTION_LOADER: PluginLoaderOptions = { applicationDirs: [DISTRIBUTION_DIR] };

/**
 * The `sluice` command's entry point (this package's `dist/cli/main.js`), for starting its
 * processes from code ({@link SluiceProcess}); the built one, also when this module runs from its
 * TypeScript source (in this repository's tests).
 */
export const SLUICE_MAIN = path.join(DISTRIBUTION_DIR, "dist", "cli", "main.js");
