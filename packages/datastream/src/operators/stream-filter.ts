import type { FilterFunction } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";

/** Passes on the records a {@link FilterFunction} keeps (Flink's `StreamFilter`). */
export function streamFilter<T>(fn: FilterFunction<T>) {
  return ({ output, runtime }: OperatorContext<T>): StreamOperator<T> => ({
    processElement: (value) => {
      if (fn(value, runtime)) output.collect(value);
    },
  });
}
