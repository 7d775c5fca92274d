import { IllegalArgumentError, type TypeSerializer } from "@sluice/core";
import { DynamicSerializer } from "./dynamic-serializer.js";
import type { OutputTag } from "./output-tag.js";
import type { OperatorContext, StreamOperator } from "./runtime/stream-operator.js";
import type { SourceReaderFactory } from "./sources/source-split.js";

/**
 * Whether an operator may share a task with its neighbours (Flink's `ChainingStrategy`):
 * ALWAYS chains to its input and its outputs, HEAD starts a chain (`startNewChain()`, and every
 * source), NEVER runs alone (`disableChaining()`).
 */
export type ChainingStrategy = "ALWAYS" | "HEAD" | "NEVER";

/** How records go from an operator to the next when they are not chained (Flink's partitioners). */
export type StreamPartitioning =
  | "FORWARD"
  | "REBALANCE"
  | "RESCALE"
  | "BROADCAST"
  | "SHUFFLE"
  | "GLOBAL"
  | "HASH";

/** A keyed stream's key: how it is extracted and serialized. */
export interface KeySpec {
  // biome-ignore lint/suspicious/noExplicitAny: a key selector of any record and key type.
  readonly selector: (value: any) => unknown;
  readonly serializer: TypeSerializer<unknown>;
  /** The uid of the keyBy that made the stream keyed (the key selector's registered name). */
  readonly uid: string;
}

/**
 * A node of the stream graph (Flink's `Transformation`): what the typed API records for every
 * operator, source, sink and partitioning, until the graph is compiled into a JobGraph. Real
 * nodes (sources, one-input operators, sinks) become operators of a chain; virtual nodes
 * (partitionings, side outputs) become properties of the edges they sit on.
 */
export abstract class Transformation<T> {
  /** The node's creation order in its environment. */
  readonly id: number;
  /** The kind, for the default uid (`map-3`). */
  readonly kind: string;
  /** The operator's name in the job (`Map`). */
  name: string;
  /** Set by `.uid(...)`: the operator's id, stable across versions of the job. */
  explicitUid: string | undefined;
  /** Set by `.setParallelism(...)`; undefined: the environment's default. */
  parallelism: number | undefined;
  /** Set by `.setMaxParallelism(...)`; undefined: the environment's, or Flink's default. */
  maxParallelism: number | undefined;
  /** Set by `.returns(...)`; undefined: inferred, else the dynamic serializer. */
  serializer: TypeSerializer<T> | undefined;
  chainingStrategy: ChainingStrategy = "ALWAYS";
  /**
   * True when the node's records are its input's (a filter, a partitioning, a reduce): without a
   * declared serializer it takes its input's.
   */
  preservesType = false;

  constructor(id: number, kind: string, name: string) {
    this.id = id;
    this.kind = kind;
    this.name = name;
  }

  /** The operator id the task side finds the node's functions by. */
  get uid(): string {
    return this.explicitUid ?? `${this.kind}-${this.id}`;
  }

  /** The nodes this one reads. */
  abstract get inputs(): readonly Transformation<unknown>[];

  /** Whether the node is an edge property rather than an operator. */
  get isVirtual(): boolean {
    return false;
  }
}

/** A source (Flink's `SourceTransformation`): no input, a reader per subtask. */
export class SourceTransformation<T> extends Transformation<T> {
  readonly open: SourceReaderFactory<T>;
  /** Records per second over all subtasks; undefined: as fast as the job takes them. */
  recordsPerSecond: number | undefined;

  constructor(id: number, name: string, open: SourceReaderFactory<T>) {
    super(id, "source", name);
    this.open = open;
    // Flink's sources start a chain: nothing chains into them.
    this.chainingStrategy = "HEAD";
  }

  get inputs(): readonly Transformation<unknown>[] {
    return [];
  }
}

/** An operator with one input (Flink's `OneInputTransformation`), or a sink. */
export class OneInputTransformation<I, O> extends Transformation<O> {
  readonly input: Transformation<I>;
  readonly createOperator: (context: OperatorContext<O>) => StreamOperator<I>;
  /** Present when the operator reads a keyed stream and keeps keyed state. */
  readonly key: KeySpec | undefined;
  /** True for a sink: it has no output. */
  readonly isSink: boolean;

  constructor(
    id: number,
    kind: string,
    name: string,
    input: Transformation<I>,
    createOperator: (context: OperatorContext<O>) => StreamOperator<I>,
    options: { readonly key?: KeySpec; readonly isSink?: boolean } = {},
  ) {
    super(id, kind, name);
    this.input = input;
    this.createOperator = createOperator;
    this.key = options.key;
    this.isSink = options.isSink ?? false;
  }

  get inputs(): readonly Transformation<unknown>[] {
    return [this.input as Transformation<unknown>];
  }
}

/** A change of partitioning between two operators (Flink's `PartitionTransformation`). */
export class PartitionTransformation<T> extends Transformation<T> {
  readonly input: Transformation<T>;
  readonly partitioning: StreamPartitioning;
  /** The key, for HASH. */
  readonly key: KeySpec | undefined;

  constructor(
    id: number,
    input: Transformation<T>,
    partitioning: StreamPartitioning,
    key?: KeySpec,
  ) {
    super(id, partitioning === "HASH" ? "keyBy" : "partition", partitioning);
    if (partitioning === "HASH" && key === undefined) {
      throw new IllegalArgumentError("HASH partitioning needs a key");
    }
    this.input = input;
    this.partitioning = partitioning;
    this.key = key;
    this.preservesType = true;
  }

  get inputs(): readonly Transformation<unknown>[] {
    return [this.input as Transformation<unknown>];
  }

  override get isVirtual(): boolean {
    return true;
  }
}

/** The side output `tag` of an operator (Flink's `SideOutputTransformation`). */
export class SideOutputTransformation<T> extends Transformation<T> {
  readonly input: Transformation<unknown>;
  readonly tag: OutputTag<T>;

  constructor(id: number, input: Transformation<unknown>, tag: OutputTag<T>) {
    super(id, "sideOutput", tag.id);
    this.input = input;
    this.tag = tag;
    this.serializer = tag.serializer;
  }

  get inputs(): readonly Transformation<unknown>[] {
    return [this.input];
  }

  override get isVirtual(): boolean {
    return true;
  }
}

/**
 * The serializer of `node`'s records: the declared one, else its input's for a node that keeps
 * its input's records, else the dynamic serializer. Both the submitting process and every task
 * manager compute it from the same graph, so they agree on each edge's serializer name.
 */
export function serializerOf(node: Transformation<unknown>): TypeSerializer<unknown> {
  let current: Transformation<unknown> | undefined = node;
  while (current !== undefined) {
    if (current.serializer !== undefined) return current.serializer;
    if (current instanceof SideOutputTransformation) return DynamicSerializer.INSTANCE;
    current = current.preservesType ? current.inputs[0] : undefined;
  }
  return DynamicSerializer.INSTANCE;
}
