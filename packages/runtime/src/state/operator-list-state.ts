import type { JsonValue } from "@sluice/runtime-api";
import { StateAssignmentError } from "./state-assignment-error.js";

/** The `format` of an operator list state snapshot. */
export const OPERATOR_LIST_STATE_FORMAT = "sluice-operator-list-state";

/** The version of the layout this release writes and reads. */
export const OPERATOR_LIST_STATE_VERSION = 1;

/**
 * How the elements of an operator list state are redistributed when its vertex is restored at
 * another parallelism (Flink's `OperatorStateHandle.Mode`):
 *
 * - `SPLIT_DISTRIBUTE`: the elements of every old subtask, in old subtask order, are split into
 *   contiguous runs, one per new subtask (Flink's `ListState`, e.g. a sink's pending
 *   transactions): each element goes to exactly one new subtask.
 * - `UNION`: every new subtask gets every element of every old subtask (Flink's union list
 *   state: each picks what it needs).
 * - `BROADCAST`: every old subtask held the same elements; new subtask `i` gets those of old
 *   subtask `i mod (old subtasks that stored it)` (Flink's broadcast state).
 */
export type OperatorStateDistributionMode = "SPLIT_DISTRIBUTE" | "UNION" | "BROADCAST";

const MODES: readonly OperatorStateDistributionMode[] = ["SPLIT_DISTRIBUTE", "UNION", "BROADCAST"];

/**
 * A non-keyed state of one subtask that can be redistributed when its vertex is restored at
 * another parallelism (Flink's operator `ListState` with its distribution mode), as JSON in the
 * task's checkpointed state: put it anywhere in what `snapshotState` returns (on its own, or as
 * a field of an object), make it with {@link operatorListState} and read it back with
 * {@link operatorListStateElements}. A restore at the same parallelism gives each subtask its
 * own elements back.
 */
export type OperatorListStateSnapshot = {
  /** Always {@link OPERATOR_LIST_STATE_FORMAT}. */
  readonly format: typeof OPERATOR_LIST_STATE_FORMAT;
  /** The layout's version, {@link OPERATOR_LIST_STATE_VERSION}. */
  readonly version: number;
  /** How the elements are redistributed at another parallelism. */
  readonly mode: OperatorStateDistributionMode;
  /** The elements, each any JSON. */
  readonly elements: JsonValue[];
};

/**
 * The operator list state of `elements` (in this order), redistributed by `mode` when the
 * vertex is restored at another parallelism.
 */
export function operatorListState(
  elements: readonly JsonValue[],
  mode: OperatorStateDistributionMode = "SPLIT_DISTRIBUTE",
): OperatorListStateSnapshot {
  return {
    format: OPERATOR_LIST_STATE_FORMAT,
    version: OPERATOR_LIST_STATE_VERSION,
    mode,
    elements: [...elements],
  };
}

/** Whether `value` claims to be an operator list state snapshot (has its `format`). */
export function isOperatorListStateSnapshot(value: unknown): value is OperatorListStateSnapshot {
  return (
    typeof value === "object" &&
    value !== null &&
    (value as { format?: unknown }).format === OPERATOR_LIST_STATE_FORMAT
  );
}

/**
 * Checks that `value` is an operator list state snapshot this release reads and returns it
 * typed. `where` names it in messages.
 *
 * @throws StateAssignmentError naming what is wrong.
 */
export function checkOperatorListStateSnapshot(
  value: unknown,
  where: string,
): OperatorListStateSnapshot {
  const snapshot = value as Partial<OperatorListStateSnapshot> | undefined;
  const problem = !isOperatorListStateSnapshot(value)
    ? `its format is not "${OPERATOR_LIST_STATE_FORMAT}"`
    : snapshot?.version !== OPERATOR_LIST_STATE_VERSION
      ? `version ${snapshot?.version}, this release reads ${OPERATOR_LIST_STATE_VERSION}`
      : !MODES.includes(snapshot.mode as OperatorStateDistributionMode)
        ? `mode ${JSON.stringify(snapshot.mode)} (one of ${MODES.join(", ")})`
        : !Array.isArray(snapshot.elements)
          ? "no elements list"
          : undefined;
  if (problem !== undefined) {
    throw new StateAssignmentError(
      `${where}: not an operator list state snapshot this release reads: ${problem}`,
    );
  }
  return value as OperatorListStateSnapshot;
}

/**
 * The elements of a restored operator list state, or none for a fresh start (`undefined`).
 *
 * @throws StateAssignmentError when `restored` is not an operator list state snapshot.
 */
export function operatorListStateElements(
  restored: JsonValue | undefined,
  where = "the restored operator list state",
): JsonValue[] {
  if (restored === undefined || restored === null) return [];
  return [...checkOperatorListStateSnapshot(restored, where).elements];
}

/**
 * Redistributes one operator list state over `newParallelism` subtasks (Flink's
 * `RoundRobinOperatorStateRepartitioner` for one named state): `old` holds the state of each old
 * subtask in subtask order (`undefined` where a subtask stored none). A pure function.
 *
 * SPLIT_DISTRIBUTE cuts the concatenated elements into `newParallelism` contiguous runs whose
 * lengths differ by at most one; the longer runs go to the subtasks from `startSubtask` on
 * (Flink rotates that start from one named state to the next, so that the odd elements of many
 * states do not all land on subtask 0); at the same parallelism each subtask keeps its own.
 * UNION and BROADCAST as {@link OperatorStateDistributionMode}.
 *
 * @returns the state of every new subtask, and where the next named state's longer runs start.
 * @throws StateAssignmentError when the old subtasks stored it with different modes.
 */
export function repartitionOperatorListState(
  old: readonly (OperatorListStateSnapshot | undefined)[],
  newParallelism: number,
  where: string,
  startSubtask = 0,
): { readonly states: OperatorListStateSnapshot[]; readonly nextStartSubtask: number } {
  const present = old.filter((state): state is OperatorListStateSnapshot => state !== undefined);
  const mode = present[0]?.mode ?? "SPLIT_DISTRIBUTE";
  const mixed = present.find((state) => state.mode !== mode);
  if (mixed !== undefined) {
    throw new StateAssignmentError(
      `${where}: the old subtasks stored this operator list state as ${mode} and as ${mixed.mode}; one state has one distribution mode`,
    );
  }
  if (mode === "UNION") {
    const all = present.flatMap((state) => state.elements);
    return {
      states: Array.from({ length: newParallelism }, () => operatorListState(all, mode)),
      nextStartSubtask: startSubtask,
    };
  }
  if (old.length === newParallelism && mode === "SPLIT_DISTRIBUTE") {
    // At the same parallelism each subtask keeps its own elements (Flink repartitions only
    // UNION and partly reported BROADCAST states then).
    return {
      states: old.map((state) => operatorListState(state?.elements ?? [], mode)),
      nextStartSubtask: startSubtask,
    };
  }
  if (mode === "BROADCAST") {
    return {
      states: Array.from({ length: newParallelism }, (_, i) =>
        operatorListState(
          present.length === 0 ? [] : (present[i % present.length]?.elements ?? []),
          mode,
        ),
      ),
      nextStartSubtask: startSubtask,
    };
  }
  const all = present.flatMap((state) => state.elements);
  const runs: JsonValue[][] = Array.from({ length: newParallelism }, () => []);
  const baseFraction = Math.floor(all.length / newParallelism);
  let remainder = all.length % newParallelism;
  let nextStartSubtask = startSubtask;
  let taken = 0;
  for (let i = 0; i < newParallelism; i++) {
    const subtask = (i + startSubtask) % newParallelism;
    let count = baseFraction;
    if (remainder > 0) {
      count++;
      remainder--;
    } else if (remainder === 0) {
      // Out of odd elements: the next named state starts its odd elements here.
      nextStartSubtask = subtask;
      remainder--;
    }
    runs[subtask] = all.slice(taken, taken + count);
    taken += count;
  }
  return {
    states: runs.map((elements) => operatorListState(elements, mode)),
    nextStartSubtask,
  };
}
