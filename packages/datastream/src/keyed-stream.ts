import type { TypeSerializer } from "@sluice/core";
import { DataStream, type SingleOutputStreamOperator } from "./data-stream.js";
import { DynamicSerializer } from "./dynamic-serializer.js";
import type {
  AggregateFunction,
  KeyedProcessFunction,
  KeySelector,
  ReduceFunction,
} from "./functions.js";
import { keyedProcessOperator } from "./operators/keyed-process-operator.js";
import { streamAggregate } from "./operators/stream-aggregate.js";
import { streamGroupedReduce } from "./operators/stream-grouped-reduce.js";
import type { KeySpec, PartitionTransformation } from "./transformation.js";

/** What `aggregate` takes besides the function. */
export interface AggregateOptions<ACC> {
  /** The accumulators' serializer, for keyed state snapshots (default: the dynamic serializer). */
  readonly accumulatorType?: TypeSerializer<ACC>;
}

/**
 * A stream partitioned by key (Flink's `KeyedStream`): the operators added with {@link process},
 * {@link reduce} and {@link aggregate} run with the record's key set, and keep keyed state
 * (`ValueState`, `ListState`, `MapState`) per key, snapshotted by key group in every checkpoint.
 * Other operators (`map`, ...) just read it partitioned by key.
 */
export class KeyedStream<T, K> extends DataStream<T> {
  /** @internal */
  readonly key: KeySpec;

  /** @internal */
  constructor(stream: DataStream<T>, partition: PartitionTransformation<T>) {
    super(stream.environment, partition);
    this.key = partition.key as KeySpec;
  }

  /** The key selector. */
  get keySelector(): KeySelector<T, K> {
    return this.key.selector as KeySelector<T, K>;
  }

  /**
   * Processes each record with its key set (Flink's `KeyedProcessFunction`), named
   * `KeyedProcess`: the function's context gives the key and the keyed state of this operator.
   */
  override process<R>(fn: KeyedProcessFunction<K, T, R>): SingleOutputStreamOperator<R> {
    return this.transform(
      "keyedProcess",
      "KeyedProcess",
      keyedProcessOperator(this.keySelector, fn),
      { key: this.key },
    );
  }

  /**
   * Reduces each key's records with `fn` into one value, kept in keyed state, and emits it after
   * every record (Flink's `reduce` on a keyed stream), named `Keyed Reduce`.
   */
  reduce(fn: ReduceFunction<T>): SingleOutputStreamOperator<T> {
    const stream = this.transform(
      "reduce",
      "Keyed Reduce",
      streamGroupedReduce(this.keySelector, fn, this.serializer),
      { key: this.key },
    );
    stream.transformation.preservesType = true;
    return stream;
  }

  /**
   * Adds each record to its key's accumulator, kept in keyed state, and emits `fn.getResult` of
   * it after every record (a rolling aggregation), named `Keyed Aggregation`.
   */
  aggregate<ACC, R>(
    fn: AggregateFunction<T, ACC, R>,
    options: AggregateOptions<ACC> = {},
  ): SingleOutputStreamOperator<R> {
    const accumulators =
      options.accumulatorType ?? (DynamicSerializer.INSTANCE as TypeSerializer<ACC>);
    return this.transform(
      "aggregate",
      "Keyed Aggregation",
      streamAggregate(this.keySelector, fn, accumulators),
      { key: this.key },
    );
  }
}
