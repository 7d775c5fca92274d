import type { TypeSerializer } from "@sluice/core";
import { type KeyedStateBackend, ValueStateDescriptor } from "@sluice/runtime";
import type { AggregateFunction, KeySelector } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";
import { keyedStateOf } from "./keyed-process-operator.js";

/** The state an aggregation keeps its accumulator in, per key. */
export const AGGREGATE_STATE_NAME = "_aggregate";

/**
 * Adds each record to its key's accumulator, kept in keyed state, and emits the result after
 * every record (Flink's rolling aggregation on a keyed stream, with an `AggregateFunction`).
 */
export function streamAggregate<K, T, ACC, R>(
  selector: KeySelector<T, K>,
  fn: AggregateFunction<T, ACC, R>,
  accumulatorSerializer: TypeSerializer<ACC>,
) {
  return (context: OperatorContext<R>): StreamOperator<T> => {
    const backend = keyedStateOf(context as OperatorContext<unknown>) as KeyedStateBackend<K>;
    const state = backend.getState(
      new ValueStateDescriptor(AGGREGATE_STATE_NAME, accumulatorSerializer),
    );
    return {
      processElement: (value) => {
        backend.setCurrentKey(selector(value));
        const accumulator = fn.add(value, state.value() ?? fn.createAccumulator());
        state.update(accumulator);
        context.output.collect(fn.getResult(accumulator));
      },
    };
  };
}
