import type { ConfigOption } from "../config/config-option.js";
import type { InputGate } from "../consumer/input-gate.js";
import type { ShuffleDescriptor } from "../descriptors/shuffle-descriptor.js";
import type { ResultPartitionWriter } from "../partition/result-partition-writer.js";
import type { ShuffleEnvironmentContext, ShuffleMasterContext } from "./contexts.js";
import type { ShuffleEnvironment } from "./shuffle-environment.js";
import type { ShuffleMaster } from "./shuffle-master.js";
import {
  SHUFFLE_SERVICE_FACTORY_BRAND,
  type ShuffleServiceFactory,
} from "./shuffle-service-factory.js";

/**
 * A {@link ShuffleServiceFactory} that forwards every member to another factory, the base of a
 * decorator plugin (metrics, logging, fault injection around another plugin): a subclass
 * overrides only what it changes, typically `createShuffleEnvironment` and `createShuffleMaster`
 * to wrap the result in a `ForwardingShuffleEnvironment` or `ForwardingShuffleMaster` subclass. The loader instantiates a plugin class without arguments, so a decorator's
 * constructor creates the factory it wraps:
 *
 * ```ts
 * export class LoggingShuffleServiceFactory extends ForwardingShuffleServiceFactory {
 *   constructor() {
 *     super(new TcpShuffleServiceFactory());
 *   }
 *   override createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment {
 *     return new LoggingShuffleEnvironment(super.createShuffleEnvironment(context));
 *   }
 * }
 * ```
 *
 * @typeParam SD the wrapped plugin's shuffle descriptor type.
 * @typeParam P the wrapped plugin's writer type.
 * @typeParam G the wrapped plugin's gate type.
 */
export class ForwardingShuffleServiceFactory<
  SD extends ShuffleDescriptor = ShuffleDescriptor,
  P extends ResultPartitionWriter = ResultPartitionWriter,
  G extends InputGate = InputGate,
> implements ShuffleServiceFactory<SD, P, G>
{
  /** Marks the decorator as a shuffle service factory, whatever the wrapped one carries. */
  readonly [SHUFFLE_SERVICE_FACTORY_BRAND] = true as const;

  /** @param delegate the factory every member goes to. */
  constructor(protected readonly delegate: ShuffleServiceFactory<SD, P, G>) {}

  /**
   * The wrapped factory's options (empty when it declares none), so the runtime still knows and
   * checks its keys. A decorator with options of its own overrides this getter and returns
   * `[...super.configOptions, ...its own]`.
   */
  get configOptions(): readonly ConfigOption<unknown>[] {
    return this.delegate.configOptions ?? [];
  }

  /** Whether the wrapped factory serves the threads of a threaded task manager (its value). */
  get supportsTaskSlotThreads(): boolean | undefined {
    return this.delegate.supportsTaskSlotThreads;
  }

  /** The wrapped factory's master; see {@link ShuffleServiceFactory.createShuffleMaster}. */
  createShuffleMaster(context: ShuffleMasterContext): ShuffleMaster<SD> {
    return this.delegate.createShuffleMaster(context);
  }

  /**
   * The wrapped factory's environment; see {@link ShuffleServiceFactory.createShuffleEnvironment}.
   *
   * @throws ConfigurationError when the wrapped factory finds the configuration invalid.
   */
  createShuffleEnvironment(context: ShuffleEnvironmentContext): ShuffleEnvironment<P, G> {
    return this.delegate.createShuffleEnvironment(context);
  }
}
