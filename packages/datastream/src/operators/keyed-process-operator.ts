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
 * The states an operator's function asked for, by descriptor object, created on first use. A
 * function asks for its state per record (`ctx.getState(COUNT)` in the record's callback), so the
 * descriptor asked for last is checked first: that lookup is a comparison, not a map's.
 */
class StateCache<S> {
  private readonly states = new Map<StateDescriptor, S>();
  private lastDescriptor: StateDescriptor | undefined;
  private lastState: S | undefined;

  constructor(private readonly create: (descriptor: StateDescriptor) => S) {}

  get(descriptor: StateDescriptor): S {
    return descriptor === this.lastDescriptor ? (this.lastState as S) : this.lookUp(descriptor);
  }

  private lookUp(descriptor: StateDescriptor): S {
    let state = this.states.get(descriptor);
    if (state === undefined) {
      state = this.create(descriptor);
      this.states.set(descriptor, state);
    }
    this.lastDescriptor = descriptor;
    this.lastState = state;
    return state;
  }
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
    // One cache per kind of state: each returns the states of its kind only.
    const values = new StateCache((d) => backend.getState(d as ValueStateDescriptor<unknown>));
    const lists = new StateCache((d) => backend.getListState(d as ListStateDescriptor<unknown>));
    const maps = new StateCache((d) =>
      backend.getMapState(d as MapStateDescriptor<unknown, unknown>),
    );
    const ctx: KeyedProcessContext<K, O> = {
      ...processContextOf(context),
      getCurrentKey: () => backend.getCurrentKey(),
      getState: <S>(descriptor: ValueStateDescriptor<S>) => values.get(descriptor) as ValueState<S>,
      getListState: <S>(descriptor: ListStateDescriptor<S>) =>
        lists.get(descriptor) as ListState<S>,
      getMapState: <UK, UV>(descriptor: MapStateDescriptor<UK, UV>) =>
        maps.get(descriptor) as MapState<UK, UV>,
    };
    return {
      processElement: (value) => {
        backend.setCurrentKey(selector(value));
        fn(value, ctx);
      },
    };
  };
}
