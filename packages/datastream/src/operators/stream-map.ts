import type { MapFunction } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";

/** Calls a {@link MapFunction} per record (Flink's `StreamMap`). */
export function streamMap<I, O>(fn: MapFunction<I, O>) {
  return ({ output, runtime }: OperatorContext<O>): StreamOperator<I> => ({
    processElement: (value) => output.collect(fn(value, runtime)),
  });
}
