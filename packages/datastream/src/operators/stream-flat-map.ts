import type { FlatMapFunction } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";

/** Passes on every record a {@link FlatMapFunction} returns (Flink's `StreamFlatMap`). */
export function streamFlatMap<I, O>(fn: FlatMapFunction<I, O>) {
  return ({ output, runtime }: OperatorContext<O>): StreamOperator<I> => ({
    processElement: (value) => {
      for (const result of fn(value, runtime)) output.collect(result);
    },
  });
}
