import { IllegalStateError } from "@sluice/core";
import type {
  KeyedStateBackend,
  ListState,
  ListStateDescriptor,
  MapState,
  MapStateDescriptor,
  StateDescriptor,
  ValueState,
  ValueStateDescriptor,
} from "@sluice/runtime";
import type { KeyedProcessContext, KeyedProcessFunction, KeySelector } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";
import { processContextOf } from "./process-operator.js";

/** The keyed state backend of an operator on a keyed stream (the task creates it). */
export function keyedStateOf(context: OperatorContext<unknown>): KeyedStateBackend<unknown> {
  const backend = context.keyedState;
  if (backend === undefined) {
    throw new IllegalStateError(
      `${context.runtime.taskName}: a keyed operator was created without keyed state`,
    );
  }
  return backend;
}

/**
 * Calls a {@link KeyedProcessFunction} per record with the backend set to the record's key
 * (Flink's `KeyedProcessOperator`); the states it asks for by descriptor are looked up once per
 * descriptor object.
 */
export function keyedProcessOperator<K, I, O>(
  selector: KeySelector<I, K>,
  fn: KeyedProcessFunction<K, I, O>,
) {
  return (context: OperatorContext<O>): StreamOperator<I> => {
    const backend = keyedStateOf(context as OperatorContext<unknown>) as KeyedStateBackend<K>;
    const states = new Map<StateDescriptor, unknown>();
    const cached = <S>(descriptor: StateDescriptor, create: () => S): S => {
      let state = states.get(descriptor) as S | undefined;
      if (state === undefined) {
        state = create();
        states.set(descriptor, state);
      }
      return state;
    };
    const ctx: KeyedProcessContext<K, O> = {
      ...processContextOf(context),
      getCurrentKey: () => backend.getCurrentKey(),
      getState: <S>(descriptor: ValueStateDescriptor<S>): ValueState<S> =>
        cached(descriptor, () => backend.getState(descriptor)),
      getListState: <S>(descriptor: ListStateDescriptor<S>): ListState<S> =>
        cached(descriptor, () => backend.getListState(descriptor)),
      getMapState: <UK, UV>(descriptor: MapStateDescriptor<UK, UV>): MapState<UK, UV> =>
        cached(descriptor, () => backend.getMapState(descriptor)),
    };
    return {
      processElement: (value) => {
        backend.setCurrentKey(selector(value));
        fn(value, ctx);
      },
    };
  };
}
