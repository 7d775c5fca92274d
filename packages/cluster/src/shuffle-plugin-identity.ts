import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import {
  type LoadedShuffleServiceFactory,
  parseFactoryReference,
  SHUFFLE_SERVICE_ALIASES,
} from "@sluice/runtime/plugin";
import { ShuffleServiceOptions } from "@sluice/runtime-api";

/**
 * Which shuffle plugin a process loaded, as the job manager compares a task manager's with its
 * own: a ShuffleMaster and ShuffleEnvironments of different plugins (or versions of one) cannot
 * understand each other's descriptors.
 */
export interface ShufflePluginIdentity {
  /** `<module>#<export>`, aliases expanded (`tcp` → `@sluice/shuffle-tcp#TcpShuffleServiceFactory`). */
  readonly reference: string;
  /** `name@version` of the package the module belongs to, when it has a package.json. */
  readonly package: string | null;
}

/** The identity of a plugin the runtime's loader loaded. */
export function shufflePluginIdentity(loaded: LoadedShuffleServiceFactory): ShufflePluginIdentity {
  return { reference: describeReference(loaded.value), package: packageOf(loaded.file) };
}

/** `"@sluice/shuffle-tcp#TcpShuffleServiceFactory (@sluice/shuffle-tcp@0.1.0)"`, for messages. */
export function describeShufflePlugin(plugin: ShufflePluginIdentity): string {
  return plugin.package === null ? plugin.reference : `${plugin.reference} (${plugin.package})`;
}

function describeReference(value: string): string {
  const key = ShuffleServiceOptions.SHUFFLE_SERVICE_FACTORY_CLASS.key;
  // The loader parsed the same value successfully before it loaded the module.
  const reference = parseFactoryReference(value, key, SHUFFLE_SERVICE_ALIASES);
  return reference.exportName === undefined
    ? reference.specifier
    : `${reference.specifier}#${reference.exportName}`;
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
