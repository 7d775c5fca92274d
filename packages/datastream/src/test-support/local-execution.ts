import { fileURLToPath } from "node:url";
import { Configuration, type ShuffleServiceLoaderOptions } from "@sluice/runtime";

/** This package's folder: its devDependencies hold the plugins the tests load. */
export const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

/** Where the tests' plugins are resolved from. */
export const LOADER: ShuffleServiceLoaderOptions = { applicationDirs: [PACKAGE_DIR] };

/** In-process channels, small memory, fast flushing; `extra` overrides. */
export function localConfiguration(extra: Record<string, unknown> = {}): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
    "taskmanager.memory.network.min": "8mb",
    "taskmanager.memory.segment-size": "4kb",
    "execution.buffer-timeout.interval": "5ms",
    ...extra,
  });
}

/** {@link localConfiguration} with checkpoints every `intervalMs` into `dir` and restarts. */
export function checkpointingConfiguration(
  dir: string,
  extra: Record<string, unknown> = {},
): Configuration {
  return localConfiguration({
    "state.checkpoints.dir": dir,
    "execution.checkpointing.interval": "30ms",
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": 5,
    "restart-strategy.fixed-delay.delay": "10ms",
    ...extra,
  });
}
