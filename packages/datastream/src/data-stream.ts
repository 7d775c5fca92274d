import type { TypeSerializer } from "@sluice/core";
import { checkParallelism, DataStreamSink } from "./data-stream-sink.js";
import type {
  FilterFunction,
  FlatMapFunction,
  KeySelector,
  MapFunction,
  ProcessFunction,
  RuntimeContext,
  SinkFunction,
} from "./functions.js";
import type { KeyedStream } from "./keyed-stream.js";
import { processOperator } from "./operators/process-operator.js";
import { sinkOperator } from "./operators/sink-operator.js";
import { streamFilter } from "./operators/stream-filter.js";
import { streamFlatMap } from "./operators/stream-flat-map.js";
import { streamMap } from "./operators/stream-map.js";
import type { OutputTag } from "./output-tag.js";
import type { OperatorContext, StreamOperator } from "./runtime/stream-operator.js";
import { CollectSink } from "./sinks/collect-sink.js";
import { defaultLineFormat } from "./sinks/file-sink.js";
import type { Sink } from "./sinks/sink.js";
import type { StreamExecutionEnvironment } from "./stream-execution-environment.js";
import {
  OneInputTransformation,
  PartitionTransformation,
  SideOutputTransformation,
  type StreamPartitioning,
  serializerOf,
  type Transformation,
} from "./transformation.js";

/** What `keyBy` takes besides the key selector. */
export interface KeyByOptions<K> {
  /** The keys' serializer, for keyed state snapshots (default: the dynamic serializer). */
  readonly keyType?: TypeSerializer<K>;
}

/**
 * A stream of records of type `T` (Flink's `DataStream`): each method adds an operator or a
 * partitioning to the job and returns the stream it produces. Nothing runs until the job is
 * executed or deployed. A function given to an operator must be deterministic in what it is
 * (the same module builds the same graph in every process) but may do anything when called.
 */
export class DataStream<T> {
  /** @internal */
  constructor(
    /** The environment the stream belongs to. */
    readonly environment: StreamExecutionEnvironment,
    /** @internal */
    readonly transformation: Transformation<T>,
  ) {}

  /** The serializer of the stream's records on the network (declared, inherited or dynamic). */
  get serializer(): TypeSerializer<T> {
    return serializerOf(this.transformation as Transformation<unknown>) as TypeSerializer<T>;
  }

  /** Transforms each record into one (Flink's `map`), named `Map`. */
  map<R>(fn: MapFunction<T, R>): SingleOutputStreamOperator<R> {
    return this.transform("map", "Map", streamMap(fn));
  }

  /** Keeps the records `fn` returns true for (Flink's `filter`), named `Filter`. */
  filter<S extends T>(
    fn: (value: T, context: RuntimeContext) => value is S,
  ): SingleOutputStreamOperator<S>;
  /** Keeps the records `fn` returns true for (Flink's `filter`), named `Filter`. */
  filter(fn: FilterFunction<T>): SingleOutputStreamOperator<T>;
  filter(fn: FilterFunction<T>): SingleOutputStreamOperator<T> {
    const stream = this.transform("filter", "Filter", streamFilter(fn));
    stream.transformation.preservesType = true;
    return stream;
  }

  /** Transforms each record into the records `fn` returns (Flink's `flatMap`), named `Flat Map`. */
  flatMap<R>(fn: FlatMapFunction<T, R>): SingleOutputStreamOperator<R> {
    return this.transform("flatMap", "Flat Map", streamFlatMap(fn));
  }

  /**
   * Processes each record with a context that emits any number of records and side outputs
   * (Flink's `process`), named `Process`.
   */
  process<R>(fn: ProcessFunction<T, R>): SingleOutputStreamOperator<R> {
    return this.transform("process", "Process", processOperator(fn));
  }

  /**
   * Partitions the stream by key (Flink's `keyBy`): records of one key go to one subtask of the
   * next operator, chosen by Flink's key-group assignment (`murmurHash(hashCode(key)) %
   * maxParallelism`), and the keyed operators after it keep state per key. Keys must be
   * strings, numbers, bigints, booleans, `Uint8Array`s, arrays of these, or objects with a
   * `hashCode()`.
   */
  keyBy<K>(selector: KeySelector<T, K>, options: KeyByOptions<K> = {}): KeyedStream<T, K> {
    return this.environment.keyedStream(this, selector, options);
  }

  /** Sends records round-robin to every subtask of the next operator (Flink's `rebalance`). */
  rebalance(): DataStream<T> {
    return this.partition("REBALANCE");
  }

  /** Sends every record to every subtask of the next operator (Flink's `broadcast`). */
  broadcast(): DataStream<T> {
    return this.partition("BROADCAST");
  }

  /**
   * Sends records to the next operator's subtask of the same index (Flink's `forward`): both
   * must have the same parallelism; the operators are chained when they can be.
   */
  forward(): DataStream<T> {
    return this.partition("FORWARD");
  }

  /**
   * Sends records round-robin to a subset of the next operator's subtasks (Flink's `rescale`):
   * each subtask feeds its own share of them, so only local connections are needed.
   */
  rescale(): DataStream<T> {
    return this.partition("RESCALE");
  }

  /** Sends each record to a random subtask of the next operator (Flink's `shuffle`). */
  shuffle(): DataStream<T> {
    return this.partition("SHUFFLE");
  }

  /** Sends every record to the first subtask of the next operator (Flink's `global`). */
  global(): DataStream<T> {
    return this.partition("GLOBAL");
  }

  /** Writes the stream to `sink` (Flink's `sinkTo`). */
  sinkTo(sink: Sink<T>): DataStreamSink<T> {
    return new DataStreamSink(this.addSinkNode(sink.name, (uid) => sinkOperator(sink, uid)));
  }

  /**
   * Calls `fn` for every record in the tasks of the sink (Flink's `addSink` with a
   * `SinkFunction`), named `Unnamed`. What `fn` does is not part of checkpoints: after a
   * failure it sees the records since the last checkpoint again.
   */
  addSink(fn: SinkFunction<T>): DataStreamSink<T> {
    return this.sinkTo({
      name: "Unnamed",
      createWriter: (context) => ({ write: (value) => fn(value, context) }),
    });
  }

  /**
   * Prints every record to stdout (Flink's `print`), prefixed with its subtask (`2> `) when the
   * sink has several.
   */
  print(): DataStreamSink<T> {
    const sink: Sink<T> = {
      name: "Print to Std. Out",
      createWriter: (context) => {
        const prefix = context.numberOfSubtasks > 1 ? `${context.subtaskIndex + 1}> ` : "";
        return { write: (value) => process.stdout.write(`${prefix}${defaultLineFormat(value)}`) };
      },
    };
    return this.sinkTo(sink);
  }

  /**
   * Collects the stream's records into the job's result, exactly once; read them with
   * `sink.results(jobResult)`. For tests and small results.
   */
  collect(): CollectStreamSink<T> {
    let node: OneInputTransformation<T, never> | undefined;
    const sink = new CollectSink<T>(
      () => node?.uid ?? "",
      () => this.serializer,
    );
    node = this.addSinkNode(sink.name, (uid) => sinkOperator(sink, uid));
    return new CollectStreamSink(node, sink);
  }

  /** @internal */
  protected partition(partitioning: StreamPartitioning): DataStream<T> {
    const node = this.environment.addTransformation(
      (id) => new PartitionTransformation<T>(id, this.transformation, partitioning),
    );
    return new DataStream(this.environment, node);
  }

  /** @internal */
  protected transform<R>(
    kind: string,
    name: string,
    createOperator: (context: OperatorContext<R>) => StreamOperator<T>,
    options: ConstructorParameters<typeof OneInputTransformation>[5] = {},
  ): SingleOutputStreamOperator<R> {
    const node = this.environment.addTransformation(
      (id) =>
        new OneInputTransformation<T, R>(
          id,
          kind,
          name,
          this.transformation,
          createOperator,
          options,
        ),
    );
    return new SingleOutputStreamOperator(this.environment, node);
  }

  private addSinkNode(
    name: string,
    createOperator: (uid: () => string) => (context: OperatorContext<never>) => StreamOperator<T>,
  ): OneInputTransformation<T, never> {
    let node: OneInputTransformation<T, never> | undefined;
    const uid = () => (node as OneInputTransformation<T, never>).uid;
    node = this.environment.addTransformation(
      (id) =>
        new OneInputTransformation<T, never>(
          id,
          "sink",
          name,
          this.transformation,
          createOperator(uid),
          {
            isSink: true,
          },
        ),
    );
    return node;
  }
}

/**
 * The stream an operator or a source produces (Flink's `SingleOutputStreamOperator`): its
 * operator's name, uid, parallelism, serializer and chaining can be set, and its side outputs
 * read.
 */
export class SingleOutputStreamOperator<T> extends DataStream<T> {
  /** Names the operator (`Map` by default; part of its vertex's name). */
  name(name: string): this {
    this.transformation.name = name;
    return this;
  }

  /**
   * Sets the operator's uid: the id the task side finds its functions by and its state is
   * restored by (default: its kind and position, `map-3`). Set it on stateful operators so that
   * a changed job still restores their state.
   */
  uid(uid: string): this {
    this.transformation.explicitUid = uid;
    return this;
  }

  /** The operator's parallelism (default: the environment's). */
  setParallelism(parallelism: number): this {
    this.transformation.parallelism = checkParallelism(parallelism, this.transformation.name);
    return this;
  }

  /** The operator's max parallelism: its number of key groups (default: the environment's). */
  setMaxParallelism(maxParallelism: number): this {
    this.transformation.maxParallelism = checkParallelism(maxParallelism, this.transformation.name);
    return this;
  }

  /**
   * Declares the serializer of the operator's records (Flink's `returns`), e.g.
   * `Types.TUPLE(Types.STRING, Types.NUMBER)`: no type tags on the wire, and its name checked
   * where the next task reads them. Its type must be the stream's.
   */
  returns(serializer: TypeSerializer<T>): this {
    this.transformation.serializer = serializer;
    return this;
  }

  /** Runs the operator in a task of its own: not chained to its input nor its outputs. */
  disableChaining(): this {
    this.transformation.chainingStrategy = "NEVER";
    return this;
  }

  /** Starts a new chain at the operator: not chained to its input (its outputs still may be). */
  startNewChain(): this {
    this.transformation.chainingStrategy = "HEAD";
    return this;
  }

  /** The records the operator emitted to the side output `tag` (Flink's `getSideOutput`). */
  getSideOutput<X>(tag: OutputTag<X>): DataStream<X> {
    const node = this.environment.addTransformation(
      (id) =>
        new SideOutputTransformation<X>(id, this.transformation as Transformation<unknown>, tag),
    );
    return new DataStream(this.environment, node);
  }
}

/** A collect sink's end of a stream: {@link results} reads what it collected from a job's result. */
export class CollectStreamSink<T> extends DataStreamSink<T> {
  /** @internal */
  constructor(
    node: OneInputTransformation<T, never>,
    private readonly sink: CollectSink<T>,
  ) {
    super(node);
  }

  /** The records the sink collected, in subtask order, from the job's result. */
  results(result: Parameters<CollectSink<T>["results"]>[0]): T[] {
    return this.sink.results(result);
  }
}
