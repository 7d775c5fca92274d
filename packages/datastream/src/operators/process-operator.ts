import type { ProcessContext, ProcessFunction } from "../functions.js";
import type { OutputTag } from "../output-tag.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";

/** The context a process function emits through: the runtime context plus the outputs. */
export function processContextOf<O>({ output, runtime }: OperatorContext<O>): ProcessContext<O> {
  return {
    ...runtime,
    emit: output.collect,
    output: <X>(tag: OutputTag<X>, value: X) => output.collectSide(tag.id, value),
  };
}

/** Calls a {@link ProcessFunction} per record (Flink's `ProcessOperator`). */
export function processOperator<I, O>(fn: ProcessFunction<I, O>) {
  return (context: OperatorContext<O>): StreamOperator<I> => {
    const ctx = processContextOf(context);
    return { processElement: (value) => fn(value, ctx) };
  };
}
