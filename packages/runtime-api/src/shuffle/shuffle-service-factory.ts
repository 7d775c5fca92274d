import type { ConfigOption } from "../config/config-option.js";
import type { InputGate } from "../consumer/input-gate.js";
import type { ShuffleDescriptor } from "../descriptors/shuffle-descriptor.js";
import type { ResultPartitionWriter } from "../partition/result-partition-writer.js";
import type { ShuffleEnvironmentContext, ShuffleMasterContext } from "./contexts.js";
import type { ShuffleEnvironment } from "./shuffle-environment.js";
import type { ShuffleMaster } from "./shuffle-master.js";

/**
 * Brands a {@link ShuffleServiceFactory}. A factory sets `[SHUFFLE_SERVICE_FACTORY_BRAND] = true`
 * so that the loader and other packages recognise it through {@link isShuffleServiceFactory}
 * without `instanceof`, which fails across duplicate installs. It is `Symbol.for`, so every copy of
 * this package shares it.
 */
export const SHUFFLE_SERVICE_FACTORY_BRAND: unique symbol = Symbol.for(
  "@sluice/shuffle-service-factory",
);

/** The members a shuffle service factory must have, in the order error messages list them. */
export const SHUFFLE_SERVICE_FACTORY_MEMBERS = [
  "createShuffleMaster",
  "createShuffleEnvironment",
] as const;

/**
 * The entry point of a shuffle plugin (Flink's `ShuffleServiceFactory`): what
 * `shuffle-service-factory.class` names. The runtime loads the same factory on the coordinator,
 * where it calls `createShuffleMaster` once, and in every worker, where it calls
 * `createShuffleEnvironment` once.
 *
 * A plugin exports a class with a no-argument constructor or a plain object implementing this
 * interface, and should set the brand:
 *
 * ```ts
 * export class MyShuffleServiceFactory implements ShuffleServiceFactory {
 *   readonly [SHUFFLE_SERVICE_FACTORY_BRAND] = true;
 *   createShuffleMaster(context) { ... }
 *   createShuffleEnvironment(context) { ... }
 * }
 * ```
 *
 * @typeParam SD the plugin's shuffle descriptor type.
 * @typeParam P the plugin's writer type.
 * @typeParam G the plugin's gate type.
 */
export interface ShuffleServiceFactory<
  SD extends ShuffleDescriptor = ShuffleDescriptor,
  P extends ResultPartitionWriter = ResultPartitionWriter,
  G extends InputGate = InputGate,
> {
  /** Marks the object as a shuffle service factory (see {@link SHUFFLE_SERVICE_FACTORY_BRAND}). */
  readonly [SHUFFLE_SERVICE_FACTORY_BRAND]?: true;

  /**
   * The plugin's own configuration options: the keys it reads that Sluice itself does not define
   * (build them with `ConfigOptions.key(...)`). Optional; read by the runtime once the plugin is
   * loaded, before `createShuffleMaster` or `createShuffleEnvironment`. The runtime then
   * - counts their keys and fallback keys as known, so setting them draws no unknown-key warning;
   * - checks the values that are set at start-up, as it does for its own options;
   * - lists them in the generated configuration docs, under the plugin's name.
   *
   * A key Sluice already defines must not appear here (the loader rejects the plugin): read
   * Sluice's options from the context's configuration instead.
   */
  readonly configOptions?: readonly ConfigOption<unknown>[];

  /**
   * True when the plugin's environment can serve one thread of a task manager that runs its
   * slots on worker threads (`ShuffleEnvironmentContext.taskSlotThreads`): its buffer pool over
   * the shared network memory, and channels between the threads. Without it the runtime refuses
   * `taskmanager.task-slots.mode: threaded`, naming the plugin.
   */
  readonly supportsTaskSlotThreads?: boolean | undefined;

  /**
   * Creates the coordinator-side master. Called once per coordinator, before `start()`; must not
   * do I/O (do that in `ShuffleMaster.start`).
   */
  createShuffleMaster(context: ShuffleMasterContext): ShuffleMaster<SD>;

  /**
   * Creates the worker-side environment. Called once per worker process, before `start()`; must
   * not do I/O (do that in `ShuffleEnvironment.start`).
   *
   * @throws ConfigurationError when the configuration is invalid for this plugin.
   */
  createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment<P, G>;
}

/**
 * The required members `value` lacks (not functions), in declaration order; empty when `value`
 * has both. For error messages: the loader lists them when a plugin export is not a factory.
 */
export function missingShuffleServiceFactoryMembers(value: unknown): string[] {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    return [...SHUFFLE_SERVICE_FACTORY_MEMBERS];
  }
  const record = value as Record<string, unknown>;
  return SHUFFLE_SERVICE_FACTORY_MEMBERS.filter((name) => typeof record[name] !== "function");
}

/**
 * True when `value` is a shuffle service factory: it carries the brand, or it has both
 * `createShuffleMaster` and `createShuffleEnvironment` methods. Works across copies of this
 * package (no `instanceof`).
 */
export function isShuffleServiceFactory(value: unknown): value is ShuffleServiceFactory {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) return false;
  if (
    (value as { [SHUFFLE_SERVICE_FACTORY_BRAND]?: unknown })[SHUFFLE_SERVICE_FACTORY_BRAND] === true
  ) {
    return true;
  }
  return missingShuffleServiceFactoryMembers(value).length === 0;
}
