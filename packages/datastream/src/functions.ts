import type {
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "@sluice/runtime";
import type { OutputTag } from "./output-tag.js";

/**
 * What a function learns of the subtask it runs in (Flink's `RuntimeContext`).
 */
export interface RuntimeContext {
  /** The name of the task (`Source: Lines -> Split (1/2)#0`). */
  readonly taskName: string;
  /** 0-based subtask index of the operator. */
  readonly subtaskIndex: number;
  /** The operator's parallelism. */
  readonly numberOfSubtasks: number;
  /** The execution attempt (0 first, one more for every restart of the subtask). */
  readonly attemptNumber: number;
  /** The operator's max parallelism (its number of key groups). */
  readonly maxParallelism: number;
}

/** Transforms each record into one record (Flink's `MapFunction`). */
export type MapFunction<T, R> = (value: T, context: RuntimeContext) => R;

/** Keeps the records for which it returns true (Flink's `FilterFunction`). */
export type FilterFunction<T> = (value: T, context: RuntimeContext) => boolean;

/** Transforms each record into any number of records (Flink's `FlatMapFunction`). */
export type FlatMapFunction<T, R> = (value: T, context: RuntimeContext) => Iterable<R>;

/** Combines two records of one key into one (Flink's `ReduceFunction`). */
export type ReduceFunction<T> = (accumulated: T, value: T) => T;

/** Extracts the key a record is partitioned and its state is scoped by (Flink's `KeySelector`). */
export type KeySelector<T, K> = (value: T) => K;

/** A sink's function, called for every record in the task (Flink's `SinkFunction`). */
export type SinkFunction<T> = (value: T, context: RuntimeContext) => void;

/**
 * An incremental aggregation per key (Flink's `AggregateFunction`): each record is added to its
 * key's accumulator, which is kept in keyed state, and the result after each record is emitted.
 */
export interface AggregateFunction<T, ACC, R> {
  /** A new, empty accumulator for a key's first record. */
  createAccumulator(): ACC;
  /** Adds `value` to `accumulator` and returns the accumulator (the same object or a new one). */
  add(value: T, accumulator: ACC): ACC;
  /** The result of `accumulator`. */
  getResult(accumulator: ACC): R;
}

/** What a {@link ProcessFunction} may do with a record (Flink's `ProcessFunction.Context`). */
export interface ProcessContext<R> extends RuntimeContext {
  /** Emits a record downstream (Flink's `Collector.collect`). */
  emit(value: R): void;
  /** Emits a record to the side output `tag`. */
  output<X>(tag: OutputTag<X>, value: X): void;
}

/** Processes each record with a context that emits (Flink's `ProcessFunction`). */
export type ProcessFunction<T, R> = (value: T, context: ProcessContext<R>) => void;

/**
 * What a {@link KeyedProcessFunction} may do with a record: all a {@link ProcessContext} may,
 * and use keyed state, scoped to the record's key (Flink's `KeyedProcessFunction.Context` with
 * the `RuntimeContext`'s state getters).
 */
export interface KeyedProcessContext<K, R> extends ProcessContext<R> {
  /** The key of the record being processed. */
  getCurrentKey(): K;
  /** The value state `descriptor` names, scoped to the current key. */
  getState<S>(descriptor: ValueStateDescriptor<S>): ValueState<S>;
  /** The list state `descriptor` names, scoped to the current key. */
  getListState<S>(descriptor: ListStateDescriptor<S>): ListState<S>;
  /** The map state `descriptor` names, scoped to the current key. */
  getMapState<UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV>;
}

/** Processes each record of a keyed stream, with keyed state (Flink's `KeyedProcessFunction`). */
export type KeyedProcessFunction<K, T, R> = (value: T, context: KeyedProcessContext<K, R>) => void;
