import { IllegalArgumentError, type TypeSerializer } from "@sluice/core";

/** The kinds of keyed state (Flink's `StateDescriptor.Type`), as a snapshot names them. */
export type StateType = "VALUE" | "LIST" | "MAP";

/**
 * What a keyed state is called and how its values are serialized (Flink's `StateDescriptor`).
 * A state is identified by its name within its backend: a restore gives the state of a name back
 * to the descriptor of that name, which must be of the same type and serializers. A serializer
 * left out is the backend's default (`KeyedStateBackendOptions.defaultSerializer`).
 */
export interface StateDescriptor {
  /** The state's name, unique within its backend. */
  readonly name: string;
  /** VALUE, LIST or MAP. */
  readonly type: StateType;
}

function checkName(name: string): string {
  if (typeof name !== "string" || name === "") {
    throw new IllegalArgumentError("a state descriptor needs a non-empty name");
  }
  return name;
}

/** Describes a `ValueState`: one value of type `T` per key. */
export class ValueStateDescriptor<T> implements StateDescriptor {
  /** `VALUE`. */
  readonly type = "VALUE";
  /** The state's name, unique within its backend. */
  readonly name: string;
  /** The value's serializer; absent: the backend's default. */
  readonly serializer: TypeSerializer<T> | undefined;

  constructor(name: string, serializer?: TypeSerializer<T>) {
    this.name = checkName(name);
    this.serializer = serializer;
  }
}

/** Describes a `ListState`: a list of `T` per key. */
export class ListStateDescriptor<T> implements StateDescriptor {
  /** `LIST`. */
  readonly type = "LIST";
  /** The state's name, unique within its backend. */
  readonly name: string;
  /** The elements' serializer; absent: the backend's default. */
  readonly elementSerializer: TypeSerializer<T> | undefined;

  constructor(name: string, elementSerializer?: TypeSerializer<T>) {
    this.name = checkName(name);
    this.elementSerializer = elementSerializer;
  }
}

/** Describes a `MapState`: a map from `UK` to `UV` per key. */
export class MapStateDescriptor<UK, UV> implements StateDescriptor {
  /** `MAP`. */
  readonly type = "MAP";
  /** The state's name, unique within its backend. */
  readonly name: string;
  /** The map keys' serializer; absent: the backend's default. */
  readonly userKeySerializer: TypeSerializer<UK> | undefined;
  /** The map values' serializer; absent: the backend's default. */
  readonly userValueSerializer: TypeSerializer<UV> | undefined;

  constructor(
    name: string,
    userKeySerializer?: TypeSerializer<UK>,
    userValueSerializer?: TypeSerializer<UV>,
  ) {
    this.name = checkName(name);
    this.userKeySerializer = userKeySerializer;
    this.userValueSerializer = userValueSerializer;
  }
}
