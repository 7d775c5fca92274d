import { createRequire } from "node:module";
import { ConfigurationError } from "@sluice/core";

const requireBinding = createRequire(import.meta.url);

/**
 * Loads a codec's native binding on first use, so a worker that never compresses never loads
 * (or needs) it. A binding that cannot be loaded fails with a ConfigurationError naming the key.
 */
export function loadCodecBinding<T>(codec: string, moduleName: string): T {
  try {
    return requireBinding(moduleName) as T;
  } catch (cause) {
    throw new ConfigurationError(
      `'taskmanager.network.compression.codec' is ${codec}, but its binding '${moduleName}' ` +
        `cannot be loaded on this platform (${(cause as Error).message}); choose another codec ` +
        "or set 'taskmanager.network.batch-shuffle.compression.enabled' to false",
      { cause },
    );
  }
}
