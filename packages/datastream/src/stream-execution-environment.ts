import { IllegalArgumentError, type TypeSerializer } from "@sluice/core";
import {
  Configuration,
  defineJob,
  JobDeployer,
  type JobGraph,
  type JobModule,
  type JobResult,
  type ShuffleServiceLoaderOptions,
  type Task,
  TaskExecutor,
  type UserCode,
} from "@sluice/runtime";
import { type DataStream, type KeyByOptions, SingleOutputStreamOperator } from "./data-stream.js";
import { checkParallelism } from "./data-stream-sink.js";
import { DynamicSerializer } from "./dynamic-serializer.js";
import type { KeySelector } from "./functions.js";
import { type GeneratedJobGraph, generateJobGraph } from "./graph/streaming-job-graph-generator.js";
import { KeyedStream } from "./keyed-stream.js";
import type { StreamGraphIndex } from "./runtime/operator-chain.js";
import { runStreamTask } from "./runtime/stream-task.js";
import { arraySource } from "./sources/array-source.js";
import { iterableSource } from "./sources/async-iterable-source.js";
import { generatorSource } from "./sources/generator-source.js";
import type { SourceSplit } from "./sources/source-split.js";
import {
  type KeySpec,
  PartitionTransformation,
  SourceTransformation,
  serializerOf,
  type Transformation,
} from "./transformation.js";
import { serializerOfElements } from "./types.js";

/** What a {@link StreamExecutionEnvironment} is created with. */
export interface StreamExecutionEnvironmentOptions {
  /** The job's name (default `Sluice Streaming Job`): its JobGraph's name and its code's names. */
  readonly name?: string;
  /** The default parallelism of every operator and source (default 1). */
  readonly parallelism?: number;
  /** The default max parallelism (number of key groups); default: Flink's, at least 128. */
  readonly maxParallelism?: number;
}

/** What a source takes besides its records. */
export interface SourceOptions {
  /** The source's name (`Source: <name>` in the job). */
  readonly name?: string;
  /** The source's parallelism: how many subtasks split its records (default: the environment's). */
  readonly parallelism?: number;
  /** At most this many records per second over all its subtasks (default: no limit). */
  readonly recordsPerSecond?: number;
}

/** What {@link StreamExecutionEnvironment.execute} takes besides the configuration. */
export interface ExecuteOptions {
  /** Where the shuffle plugin of `shuffle-service-factory.class` is resolved from. */
  readonly loader?: ShuffleServiceLoaderOptions;
}

/**
 * Where a typed job is built (Flink's `StreamExecutionEnvironment`): sources, then operators on
 * the streams they return, then sinks. {@link createJobGraph} compiles it into a `JobGraph`,
 * chaining operators as Flink does; {@link toJobModule} packages it as the runtime's `JobModule`,
 * which every process of a job loads: where the job is submitted it gives the JobGraph, on every
 * task manager the code the graph's tasks run ({@link userCode}), which finds each chain's
 * functions by operator uid. {@link execute} runs it in this process.
 *
 * The job must be built the same way in every process: at the module's top level, from the
 * module's own code and data, not from what differs between processes.
 *
 * ```ts
 * const env = StreamExecutionEnvironment.create({ name: "word count", parallelism: 2 });
 * env
 *   .fromArray(["to be or not to be"])
 *   .flatMap((line) => line.split(" "))
 *   .keyBy((word) => word)
 *   .process<[string, number]>((word, ctx) => {
 *     const count = ctx.getState(COUNT);
 *     count.update((count.value() ?? 0) + 1);
 *     ctx.emit([word, count.value() ?? 0]);
 *   })
 *   .print();
 * export default env.toJobModule();
 * ```
 */
export class StreamExecutionEnvironment {
  /** The job's name. */
  readonly jobName: string;
  private defaultParallelism: number;
  private defaultMaxParallelism: number | undefined;
  private chaining = true;
  private readonly nodes: Transformation<unknown>[] = [];

  private constructor(options: StreamExecutionEnvironmentOptions) {
    this.jobName = options.name ?? "Sluice Streaming Job";
    if (this.jobName === "") throw new IllegalArgumentError("a job's name must not be empty");
    this.defaultParallelism = checkParallelism(options.parallelism ?? 1, this.jobName);
    this.defaultMaxParallelism =
      options.maxParallelism === undefined
        ? undefined
        : checkParallelism(options.maxParallelism, this.jobName);
  }

  /** A new environment (Flink's `getExecutionEnvironment`). */
  static create(options: StreamExecutionEnvironmentOptions = {}): StreamExecutionEnvironment {
    return new StreamExecutionEnvironment(options);
  }

  /** The default parallelism of operators and sources. */
  get parallelism(): number {
    return this.defaultParallelism;
  }

  /** Sets the default parallelism of operators and sources that set none. */
  setParallelism(parallelism: number): this {
    this.defaultParallelism = checkParallelism(parallelism, this.jobName);
    return this;
  }

  /** Sets the default max parallelism (number of key groups of keyed state). */
  setMaxParallelism(maxParallelism: number): this {
    this.defaultMaxParallelism = checkParallelism(maxParallelism, this.jobName);
    return this;
  }

  /** Turns operator chaining off: every operator runs in a task of its own. */
  disableOperatorChaining(): this {
    this.chaining = false;
    return this;
  }

  /** Whether operators are chained (the default). */
  get isChainingEnabled(): boolean {
    return this.chaining;
  }

  /**
   * A bounded source of `elements` (Flink's `fromData` / `fromCollection`), named
   * `Collection Source`: subtask `i` of `p` emits the elements at `i, i + p, ...`. Its records'
   * serializer is the one type all elements share (string, number, bigint, boolean,
   * `Uint8Array`), else the dynamic serializer.
   */
  fromArray<T>(elements: readonly T[], options: SourceOptions = {}): SingleOutputStreamOperator<T> {
    const copy = [...elements];
    const stream = this.addSource("Collection Source", arraySource(copy), options);
    stream.transformation.serializer = serializerOfElements(copy);
    return stream;
  }

  /**
   * A source of `generate(0), generate(1), ...` below `count` (Flink's `DataGeneratorSource`),
   * named `Generator Source`: subtask `i` of `p` generates the indexes `i, i + p, ...`.
   * `count` may be `Infinity`: an unbounded source that runs until the job is canceled.
   */
  fromGenerator<T>(
    count: number,
    generate: (index: number) => T,
    options: SourceOptions = {},
  ): SingleOutputStreamOperator<T> {
    if (!(count === Number.POSITIVE_INFINITY || (Number.isInteger(count) && count >= 0))) {
      throw new IllegalArgumentError(
        `a generator source needs a count that is an integer >= 0 or Infinity, got ${count}`,
      );
    }
    return this.addSource("Generator Source", generatorSource(count, generate), options);
  }

  /**
   * A source of what `open(split)` returns for each subtask, an async or a sync iterable,
   * bounded or not, named `Iterable Source`. `open` decides which records subtask
   * `split.subtaskIndex` of `split.numberOfSubtasks` reads, and must start after the first
   * `split.offset` of them (those it emitted before the checkpoint it is restored from).
   */
  fromAsyncIterable<T>(
    open: (split: SourceSplit) => AsyncIterable<T> | Iterable<T>,
    options: SourceOptions = {},
  ): SingleOutputStreamOperator<T> {
    return this.addSource("Iterable Source", iterableSource(open), options);
  }

  /** Compiles the job into a JobGraph (a new job id each time). */
  createJobGraph(): JobGraph {
    return this.compile().graph;
  }

  /** Compiles the job: its JobGraph and which operators each vertex runs. */
  compile(): GeneratedJobGraph {
    return generateJobGraph(this.nodes, {
      jobName: this.jobName,
      parallelism: this.defaultParallelism,
      maxParallelism: this.defaultMaxParallelism,
      chaining: this.chaining,
      invokable: this.invokableName,
      keySelectorName: (key) => this.keySelectorName(key),
    });
  }

  /**
   * The code the job's tasks run, for every TaskExecutor or task manager that runs them: one
   * invokable (which runs each vertex's chain), the serializers of the job's records by name,
   * and its key selectors.
   */
  get userCode(): UserCode<Task> {
    const serializers: Record<string, TypeSerializer<unknown>> = {};
    const keySelectors: Record<string, (value: unknown) => unknown> = {};
    for (const node of this.nodes) {
      const serializer = serializerOf(node);
      serializers[serializer.name] ??= serializer;
      if (node instanceof PartitionTransformation && node.key !== undefined) {
        keySelectors[this.keySelectorName(node.key)] = node.key.selector;
      }
    }
    return {
      invokables: { [this.invokableName]: (task: Task) => runStreamTask(this.index(), task) },
      serializers,
      keySelectors,
    };
  }

  /**
   * The job as the runtime's `JobModule`: export it as the default export of the job's module,
   * so that the process that submits it and every task manager load the same job.
   */
  toJobModule(): JobModule {
    const environment = this;
    return defineJob({
      name: this.jobName,
      get userCode() {
        return environment.userCode;
      },
      createJobGraph: () => environment.createJobGraph(),
    });
  }

  /**
   * Runs the job in this process (Flink's local execution): a TaskExecutor with the job's code
   * and a JobDeployer, both of the configuration's shuffle plugin, closed when the job ended.
   * Checkpoints and restarts follow the configuration's keys, as on a cluster.
   *
   * @returns the job's result (its status, each vertex's results, checkpoints and restarts).
   */
  async execute(
    configuration: Configuration = new Configuration({}),
    options: ExecuteOptions = {},
  ): Promise<JobResult> {
    const loader = options.loader === undefined ? {} : { loader: options.loader };
    const graph = this.createJobGraph();
    const executor = await TaskExecutor.start(configuration, {
      ...this.userCode,
      localCommunicationOnly: true,
      ...loader,
    });
    try {
      const deployer = await JobDeployer.start(configuration, loader);
      try {
        const execution = await deployer.deploy(graph, () => executor, { configuration });
        return await execution.terminated;
      } finally {
        await deployer.close();
      }
    } finally {
      await executor.close();
    }
  }

  /** @internal Adds a node the streams create. */
  addTransformation<N extends Transformation<unknown>>(create: (id: number) => N): N {
    const node = create(this.nodes.length);
    this.nodes.push(node);
    return node;
  }

  /** @internal Creates the keyed stream of `keyBy`. */
  keyedStream<T, K>(
    stream: DataStream<T>,
    selector: KeySelector<T, K>,
    options: KeyByOptions<K>,
  ): KeyedStream<T, K> {
    let partition: PartitionTransformation<T> | undefined;
    const key: KeySpec = {
      selector: selector as (value: unknown) => unknown,
      serializer:
        (options.keyType as TypeSerializer<unknown> | undefined) ?? DynamicSerializer.INSTANCE,
      get uid() {
        return (partition as PartitionTransformation<T>).uid;
      },
    };
    partition = this.addTransformation(
      (id) => new PartitionTransformation<T>(id, stream.transformation, "HASH", key),
    );
    return new KeyedStream<T, K>(stream, partition);
  }

  private addSource<T>(
    name: string,
    open: SourceTransformation<T>["open"],
    options: SourceOptions,
  ): SingleOutputStreamOperator<T> {
    const node = this.addTransformation(
      (id) => new SourceTransformation<T>(id, options.name ?? name, open),
    );
    if (options.parallelism !== undefined) {
      node.parallelism = checkParallelism(options.parallelism, node.name);
    }
    if (options.recordsPerSecond !== undefined) {
      if (!(options.recordsPerSecond > 0)) {
        throw new IllegalArgumentError(
          `source "${node.name}": recordsPerSecond must be > 0, got ${options.recordsPerSecond}`,
        );
      }
      node.recordsPerSecond = options.recordsPerSecond;
    }
    return new SingleOutputStreamOperator(this, node);
  }

  /** The invokable every vertex of the job runs. */
  private get invokableName(): string {
    return `datastream:${this.jobName}`;
  }

  private keySelectorName(key: KeySpec): string {
    return `datastream:${this.jobName}:${key.uid}`;
  }

  /** The job's real nodes by uid, as a task finds its chain's operators. */
  private index(): StreamGraphIndex {
    const byUid = new Map<string, Transformation<unknown>>();
    for (const node of this.nodes) {
      if (!node.isVirtual) byUid.set(node.uid, node);
    }
    return {
      jobName: this.jobName,
      transformation: (uid) => byUid.get(uid),
      uids: () => [...byUid.keys()],
    };
  }
}
