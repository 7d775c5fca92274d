import type { TypeSerializer } from "@sluice/core";
import { type KeyedStateBackend, ValueStateDescriptor } from "@sluice/runtime";
import type { KeySelector, ReduceFunction } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";
import { keyedStateOf } from "./keyed-process-operator.js";

/** The state a reduce keeps its value in, per key. */
export const REDUCE_STATE_NAME = "_reduce";

/**
 * Reduces each key's records into one value kept in keyed state and emits it after every record
 * (Flink's `StreamGroupedReduceOperator`).
 */
export function streamGroupedReduce<K, T>(
  selector: KeySelector<T, K>,
  fn: ReduceFunction<T>,
  serializer: TypeSerializer<T>,
) {
  return (context: OperatorContext<T>): StreamOperator<T> => {
    const backend = keyedStateOf(context as OperatorContext<unknown>) as KeyedStateBackend<K>;
    const state = backend.getState(new ValueStateDescriptor(REDUCE_STATE_NAME, serializer));
    return {
      processElement: (value) => {
        backend.setCurrentKey(selector(value));
        const current = state.value();
        const reduced = current === undefined ? value : fn(current, value);
        state.update(reduced);
        context.output.collect(reduced);
      },
    };
  };
}
