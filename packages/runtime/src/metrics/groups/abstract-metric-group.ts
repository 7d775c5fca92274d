import type {
  CharacterFilter,
  Counter,
  Gauge,
  Meter,
  Metric,
  MetricGroup,
} from "@sluice/runtime-api";
import type { MetricRegistry } from "../metric-registry.js";
import { emitMetricWarning } from "../metric-warning.js";
import { SCOPE_SEPARATOR } from "../scope-format.js";
import { SimpleCounter } from "../simple-counter.js";

const IDENTITY: CharacterFilter = (input) => input;

/**
 * The base of every metric group (Flink's `AbstractMetricGroup`): it holds the group's metrics and
 * subgroups, its scope components and variables, and registers each metric with the
 * {@link MetricRegistry}, which tells the reporters. Closing a group removes its metrics (and its
 * subgroups') from the reporters; a closed group accepts no new metrics (registering on it is a
 * no-op, as in Flink, so a late registration of an ended task does nothing).
 */
export abstract class AbstractMetricGroup implements MetricGroup {
  /** The registry the group's metrics are reported through. */
  readonly registry: MetricRegistry;
  /** The enclosing group, `undefined` for a root (task manager, job manager). */
  readonly parent: AbstractMetricGroup | undefined;
  private readonly scopeComponents: readonly string[];
  private readonly variables: Readonly<Record<string, string>>;
  private readonly metrics = new Map<string, Metric>();
  private readonly subgroups = new Map<string, AbstractMetricGroup>();
  private closed = false;

  protected constructor(
    registry: MetricRegistry,
    scopeComponents: readonly string[],
    parent: AbstractMetricGroup | undefined,
    ownVariables: Readonly<Record<string, string>> = {},
  ) {
    this.registry = registry;
    this.parent = parent;
    this.scopeComponents = Object.freeze([...scopeComponents]);
    this.variables = Object.freeze({ ...parent?.variables, ...ownVariables });
  }

  /** The group's name in the logical scope (`taskmanager`, `job`, `task`, or a subgroup's name). */
  protected abstract get groupName(): string;

  // ------------------------------------------------------------------------------ registration

  /** Registers a new {@link SimpleCounter} under `name` and returns it. */
  counter(name: string): SimpleCounter;
  /** Registers `counter` under `name` and returns it. */
  counter<C extends Counter>(name: string, counter: C): C;
  /** Registers a counter (a new {@link SimpleCounter} when none is given). */
  counter(name: string, counter: Counter = new SimpleCounter()): Counter {
    this.addMetric(name, counter);
    return counter;
  }

  /** Registers a gauge that reads `read` under `name` and returns it. */
  gauge(name: string, read: () => number): Gauge;
  /** Registers `gauge` (e.g. a `TimerGauge`) under `name` and returns it. */
  gauge<G extends Gauge>(name: string, gauge: G): G;
  /** Registers a gauge, wrapping a function as one. */
  gauge(name: string, gauge: Gauge | (() => number)): Gauge {
    const metric: Gauge =
      typeof gauge === "function" ? { metricType: "gauge", getValue: gauge } : gauge;
    this.addMetric(name, metric);
    return metric;
  }

  /** Registers `meter` (e.g. a `MeterView`) under `name` and returns it. */
  meter<M extends Meter>(name: string, meter: M): M {
    this.addMetric(name, meter);
    return meter;
  }

  /**
   * The subgroup `name` (created on first use): its metrics are scoped below this group, e.g.
   * `addGroup("Shuffle").addGroup("Netty")` for `Shuffle.Netty.*`.
   */
  addGroup(name: string): AbstractMetricGroup {
    let group = this.subgroups.get(name);
    if (group === undefined) {
      group = new GenericMetricGroup(this.registry, this, name);
      if (!this.closed) this.subgroups.set(name, group);
    }
    return group;
  }

  /** The metrics registered directly in this group, by name. */
  getMetrics(): ReadonlyMap<string, Metric> {
    return this.metrics;
  }

  /** The subgroups of this group, by name. */
  getSubgroups(): ReadonlyMap<string, AbstractMetricGroup> {
    return this.subgroups;
  }

  /** True once {@link close} ran. */
  isClosed(): boolean {
    return this.closed;
  }

  /**
   * Removes the group's metrics and subgroups from the reporters. Idempotent. Component groups
   * also detach from their parent (a job group closes with its last task).
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const group of this.subgroups.values()) group.close();
    this.subgroups.clear();
    for (const [name, metric] of this.metrics) this.registry.unregister(metric, name, this);
    this.metrics.clear();
  }

  // ------------------------------------------------------------------------------------- scope

  /** The scope components (see `MetricGroup.getScopeComponents`). */
  getScopeComponents(): readonly string[] {
    return this.scopeComponents;
  }

  /** This group's and its parents' variables (see `MetricGroup.getAllVariables`). */
  getAllVariables(): Readonly<Record<string, string>> {
    return this.variables;
  }

  /** The scope components and the name, filtered and joined (see `MetricGroup`). */
  getMetricIdentifier(
    metricName: string,
    filter: CharacterFilter = IDENTITY,
    delimiter: string = this.registry.delimiter,
  ): string {
    return [...this.scopeComponents, metricName].map(filter).join(delimiter);
  }

  /** The parent's logical scope and this group's name (see `MetricGroup.getLogicalScope`). */
  getLogicalScope(filter: CharacterFilter = IDENTITY, delimiter = SCOPE_SEPARATOR): string {
    const own = filter(this.groupName);
    return this.parent === undefined
      ? own
      : `${this.parent.getLogicalScope(filter, delimiter)}${delimiter}${own}`;
  }

  /** `MetricGroup <scope>`, for messages. */
  toString(): string {
    return `MetricGroup ${this.getScopeComponents().join(this.registry.delimiter)}`;
  }

  private addMetric(name: string, metric: Metric): void {
    if (this.closed) return;
    if (this.metrics.has(name)) {
      // Flink keeps the first metric: a second registration under one name is a bug of the
      // registering code, but not one that should stop a job.
      emitMetricWarning(
        `name collision: ${this.getMetricIdentifier(name)} is already registered; the second ${metric.metricType} is not reported`,
        "SLUICE_METRIC_NAME_COLLISION",
      );
      return;
    }
    this.metrics.set(name, metric);
    this.registry.register(metric, name, this);
  }
}

// GenericMetricGroup lives in this file because addGroup() creates it while it extends
// AbstractMetricGroup: in two files the modules would import each other in a cycle.

/**
 * A named subgroup below a component group (Flink's `GenericMetricGroup`), e.g. `Shuffle`,
 * `Netty`, `Input`, `Buffers`. It has the variables of its parent and adds its name to the scope.
 */
export class GenericMetricGroup extends AbstractMetricGroup {
  private readonly name: string;

  constructor(registry: MetricRegistry, parent: AbstractMetricGroup, name: string) {
    super(registry, [...parent.getScopeComponents(), name], parent);
    this.name = name;
  }

  protected get groupName(): string {
    return this.name;
  }
}
