import type { JsonObject, JsonValue } from "@sluice/runtime-api";
import type { KeyGroupRange } from "../partitioner/key-group-range.js";
import { isKeyedStateSnapshot } from "./keyed-state-snapshot.js";
import {
  checkOperatorListStateSnapshot,
  isOperatorListStateSnapshot,
  type OperatorListStateSnapshot,
  repartitionOperatorListState,
} from "./operator-list-state.js";
import { redistributeKeyedState } from "./redistribute-keyed-state.js";
import { StateAssignmentError } from "./state-assignment-error.js";

/** The new subtask a rescaled vertex's state is redistributed to. */
export interface TaskStateTarget {
  /** The vertex's name, for messages. */
  readonly vertexName: string;
  /** The new subtask's index. */
  readonly subtaskIndex: number;
  /** The vertex's new parallelism. */
  readonly parallelism: number;
  /** The new subtask's key groups (`computeKeyGroupRangeForOperatorIndex`). */
  readonly keyGroupRange: KeyGroupRange;
}

/** Fields of an object that name its layout: kept when every old subtask agrees on them. */
const LAYOUT_FIELDS: ReadonlySet<string> = new Set(["format", "version"]);

/**
 * The state of a new subtask of a vertex restored at another parallelism, made of the states
 * every old subtask stored (Flink's `StateAssignmentOperation` for one subtask, applied to a
 * task's JSON state). A pure function: every new subtask computes its part from the same old
 * states, and each part of the old state ends up exactly where the rules put it:
 *
 * - a keyed state snapshot (`KeyedStateBackend.snapshot()`): the key groups of the new
 *   subtask's range, from every old subtask (`redistributeKeyedState`);
 * - an operator list state ({@link operatorListState}): its elements by its mode (SPLIT_DISTRIBUTE,
 *   UNION, BROADCAST; `repartitionOperatorListState`);
 * - an object: field by field, by these rules, so named states compose (`{ keyed, pending }`, a
 *   typed job's chain state); its `format` and `version` fields name its layout and are kept
 *   when every old subtask stored the same;
 * - nothing (`undefined` or `null`) from every old subtask: nothing.
 *
 * Anything else (a number, a string, an array, an object that differs in its layout fields) is
 * state only its own subtask can hold — a source's offset, say — and cannot be redistributed:
 * the restore fails, naming the vertex and where in the state it is.
 *
 * @param old - the state of each old subtask in subtask order (`undefined`: it stored none); the
 *   vertex's old parallelism is its length.
 * @throws StateAssignmentError naming the vertex, the path in the state and the old subtask,
 *   when a part cannot be redistributed or the old subtasks disagree on its kind.
 */
export function redistributeTaskState(
  old: readonly (JsonValue | undefined)[],
  target: TaskStateTarget,
): JsonValue | undefined {
  const walk = new StateWalk(old.length, target);
  return walk.assign(old, []);
}

/** One redistribution: the rotation of SPLIT_DISTRIBUTE runs carries over from state to state. */
class StateWalk {
  private splitStart = 0;

  constructor(
    private readonly oldParallelism: number,
    private readonly target: TaskStateTarget,
  ) {}

  assign(
    values: readonly (JsonValue | undefined)[],
    path: readonly string[],
  ): JsonValue | undefined {
    const present = values
      .map((value, subtask) => ({ value, subtask }))
      .filter(
        (entry): entry is { value: JsonValue; subtask: number } =>
          entry.value !== undefined && entry.value !== null,
      );
    const [first] = present;
    if (first === undefined) return undefined;
    if (present.some(({ value }) => isKeyedStateSnapshot(value))) {
      this.requireAll(present, path, "a keyed state snapshot", isKeyedStateSnapshot);
      try {
        return redistributeKeyedState(
          present.map(({ value }) => value),
          this.target.keyGroupRange,
        ) as unknown as JsonValue;
      } catch (error) {
        throw new StateAssignmentError(
          `${this.where(path)}: its keyed state cannot be redistributed: ${(error as Error).message}`,
          { cause: error },
        );
      }
    }
    if (present.some(({ value }) => isOperatorListStateSnapshot(value))) {
      this.requireAll(present, path, "an operator list state", isOperatorListStateSnapshot);
      const where = this.where(path);
      const states = values.map((value, subtask) =>
        value === undefined || value === null
          ? undefined
          : checkOperatorListStateSnapshot(value, `${where} (old subtask ${subtask})`),
      );
      const { states: assigned, nextStartSubtask } = repartitionOperatorListState(
        states as (OperatorListStateSnapshot | undefined)[],
        this.target.parallelism,
        where,
        this.splitStart,
      );
      this.splitStart = nextStartSubtask;
      return assigned[this.target.subtaskIndex] as unknown as JsonValue;
    }
    if (present.every(({ value }) => isPlainObject(value))) {
      const objects = values.map((value) => (isPlainObject(value) ? value : undefined));
      const keys = [...new Set(objects.flatMap((o) => (o === undefined ? [] : Object.keys(o))))];
      keys.sort();
      const result: JsonObject = {};
      for (const key of keys) {
        const field = objects.map((o) => o?.[key]);
        if (LAYOUT_FIELDS.has(key)) {
          result[key] = this.layoutField(field, [...path, key]);
          continue;
        }
        const assigned = this.assign(field, [...path, key]);
        if (assigned !== undefined) result[key] = assigned;
      }
      return result;
    }
    const culprit = present.find(({ value }) => !isPlainObject(value)) ?? first;
    throw new StateAssignmentError(
      `${this.where(path)} of old subtask ${culprit.subtask} is ${describe(culprit.value)}, which only that subtask can hold: it cannot be redistributed from parallelism ${this.oldParallelism} to ${this.target.parallelism}. Only keyed state (KeyedStateBackend snapshots), operator list state (operatorListState) and objects of them are redistributed; restore ${this.target.vertexName} at parallelism ${this.oldParallelism}, or keep this state in one of those forms`,
    );
  }

  /** A `format` or `version` field: every old subtask that has the object must agree. */
  private layoutField(
    values: readonly (JsonValue | undefined)[],
    path: readonly string[],
  ): JsonValue {
    const present = values.filter((value) => value !== undefined);
    const [first] = present;
    const text = JSON.stringify(first);
    if (present.some((value) => JSON.stringify(value) !== text) || typeof first === "object") {
      throw new StateAssignmentError(
        `${this.where(path)} differs between the old subtasks (${[...new Set(present.map((v) => JSON.stringify(v)))].join(", ")}): the field names the layout of its object, and the objects of one state must share it`,
      );
    }
    return first as JsonValue;
  }

  private requireAll(
    present: readonly { value: JsonValue; subtask: number }[],
    path: readonly string[],
    kind: string,
    is: (value: unknown) => boolean,
  ): void {
    const other = present.find(({ value }) => !is(value));
    if (other === undefined) return;
    throw new StateAssignmentError(
      `${this.where(path)} is ${kind} in some old subtasks but ${describe(other.value)} in old subtask ${other.subtask}: the subtasks of one vertex store the same kind of state at the same place`,
    );
  }

  private where(path: readonly string[]): string {
    const at = path.length === 0 ? "the task's state" : `the state at "${path.join(".")}"`;
    return `${this.target.vertexName} (${this.target.subtaskIndex + 1}/${this.target.parallelism}): ${at}`;
  }
}

function isPlainObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** What a value is, for messages (its beginning, never all of it). */
function describe(value: JsonValue): string {
  const kind = Array.isArray(value)
    ? "an array"
    : typeof value === "object"
      ? "an object"
      : `a ${typeof value}`;
  const text = JSON.stringify(value);
  return `${kind} (${text.length > 60 ? `${text.slice(0, 60)}…` : text})`;
}
