/**
 * The redistribution of a task's state to the subtasks of another parallelism. The operator
 * list state cases are Flink's StateAssignmentOperationTest repartition cases (named after
 * them), with JSON elements in place of offsets into a state file.
 */
import { ErrorCodes } from "@sluice/core";
import type { JsonValue } from "@sluice/runtime-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { computeKeyGroupRangeForOperatorIndex } from "../partitioner/key-group-range-assignment.js";
import type { KeyedStateSnapshot } from "./keyed-state-snapshot.js";
import {
  type OperatorListStateSnapshot,
  type OperatorStateDistributionMode,
  operatorListState,
  repartitionOperatorListState,
} from "./operator-list-state.js";
import { redistributeTaskState } from "./redistribute-task-state.js";

const MAX_P = 128;

function target(subtaskIndex: number, parallelism: number, maxParallelism = MAX_P) {
  return {
    vertexName: "Count",
    subtaskIndex,
    parallelism,
    keyGroupRange: computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, subtaskIndex),
  };
}

/** The state of every new subtask. */
function redistribute(old: readonly (JsonValue | undefined)[], parallelism: number): unknown[] {
  return Array.from({ length: parallelism }, (_, i) =>
    redistributeTaskState(old, target(i, parallelism)),
  );
}

/** Keyed snapshots of `parallelism` subtasks whose key group `g` holds the bytes `kg<g>`. */
function keyedAt(parallelism: number, filled: ReadonlySet<number>): KeyedStateSnapshot[] {
  return Array.from({ length: parallelism }, (_, i) => {
    const range = computeKeyGroupRangeForOperatorIndex(MAX_P, parallelism, i);
    return {
      format: "sluice-keyed-state",
      version: 1,
      maxParallelism: MAX_P,
      keyGroupRange: { start: range.startKeyGroup, end: range.endKeyGroup },
      keySerializer: "string",
      states: [{ name: "count", type: "VALUE", serializers: ["float64"] }],
      keyGroups: [...range]
        .filter((g) => filled.has(g))
        .map((g) => ({ keyGroup: g, states: { count: `kg${g}` } })),
    };
  });
}

const list = (elements: JsonValue[], mode: OperatorStateDistributionMode) =>
  operatorListState(elements, mode) as unknown as JsonValue;

/** The elements every new subtask got of state `name` (a field of its object state). */
function elementsOf(states: unknown[], name: string): JsonValue[][] {
  return states.map(
    (state) =>
      ((state as Record<string, OperatorListStateSnapshot> | undefined)?.[name]?.elements ??
        []) as JsonValue[],
  );
}

describe("StateAssignmentOperationTest (operator list state)", () => {
  it("testRepartitionSplitDistributeStates: every element goes to exactly one new subtask, in runs that differ by at most one", () => {
    const old = [
      { "t-1": list(["a0", "a1"], "SPLIT_DISTRIBUTE") },
      { "t-2": list(["b0", "b1"], "SPLIT_DISTRIBUTE") },
    ];
    for (const parallelism of [1, 3, 4]) {
      const states = redistribute(old, parallelism);
      const t1 = elementsOf(states, "t-1");
      const t2 = elementsOf(states, "t-2");
      expect(t1.flat().sort()).toEqual(["a0", "a1"]);
      expect(t2.flat().sort()).toEqual(["b0", "b1"]);
      const sizes = t1.map((run) => run.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });

  it("testRepartitionUnionState: every new subtask gets every element of every old subtask", () => {
    const old = [
      { "t-3": list(["x"], "UNION"), "t-4": list(["y0", "y1"], "UNION") },
      { "t-3": list(["z"], "UNION") },
    ];
    for (const parallelism of [1, 2, 3]) {
      const states = redistribute(old, parallelism);
      for (const run of elementsOf(states, "t-3")) expect(run).toEqual(["x", "z"]);
      for (const run of elementsOf(states, "t-4")) expect(run).toEqual(["y0", "y1"]);
    }
  });

  it("testRepartitionBroadcastState: every new subtask gets the elements every old subtask held", () => {
    const old = [
      { "t-5": list([1, 2, 3], "BROADCAST"), "t-6": list([4, 5, 6], "BROADCAST") },
      { "t-5": list([1, 2, 3], "BROADCAST"), "t-6": list([4, 5, 6], "BROADCAST") },
    ];
    for (const parallelism of [1, 3]) {
      const states = redistribute(old, parallelism);
      for (const run of elementsOf(states, "t-5")) expect(run).toEqual([1, 2, 3]);
      for (const run of elementsOf(states, "t-6")) expect(run).toEqual([4, 5, 6]);
    }
  });

  it("testRepartitionBroadcastStateWithNullSubtaskState: a broadcast state only one old subtask reported still reaches every new subtask", () => {
    const old = [
      { "t-5": list([1, 2, 3], "BROADCAST"), "t-6": list([4, 5, 6], "BROADCAST") },
      undefined,
    ];
    for (const parallelism of [1, 3]) {
      const states = redistribute(old, parallelism);
      for (const run of elementsOf(states, "t-5")) expect(run).toEqual([1, 2, 3]);
      for (const run of elementsOf(states, "t-6")) expect(run).toEqual([4, 5, 6]);
    }
  });

  it("testRepartitionBroadcastStateWithEmptySubtaskState: a broadcast state one old subtask left out of its state still reaches every new subtask", () => {
    const old = [{ "t-5": list([1, 2, 3], "BROADCAST"), "t-6": list([4, 5, 6], "BROADCAST") }, {}];
    for (const parallelism of [1, 3]) {
      const states = redistribute(old, parallelism);
      for (const run of elementsOf(states, "t-5")) expect(run).toEqual([1, 2, 3]);
    }
  });

  it("testReDistributeCombinedPartitionableStates: states of every mode side by side, scaled up, down and not at all", () => {
    const old = [
      {
        "t-1": list(["u0"], "UNION"),
        "t-2": list(["v0", "v1"], "UNION"),
        "t-3": list(["s0", "s1"], "SPLIT_DISTRIBUTE"),
        "t-4": list([7, 8], "BROADCAST"),
      },
      { "t-1": list(["u1"], "UNION"), "t-4": list([7, 8], "BROADCAST") },
    ];
    for (const parallelism of [3, 1, 2]) {
      const states = redistribute(old, parallelism);
      for (const run of elementsOf(states, "t-1")) expect(run).toEqual(["u0", "u1"]);
      for (const run of elementsOf(states, "t-2")) expect(run).toEqual(["v0", "v1"]);
      for (const run of elementsOf(states, "t-4")) expect(run).toEqual([7, 8]);
      expect(elementsOf(states, "t-3").flat().sort()).toEqual(["s0", "s1"]);
    }
    // Not rescaled: each subtask keeps its own SPLIT_DISTRIBUTE elements (Flink's same rule).
    expect(elementsOf(redistribute(old, 2), "t-3")).toEqual([["s0", "s1"], []]);
  });

  it("splits SPLIT_DISTRIBUTE elements over any new parallelism exactly once, rotating the longer runs from state to state", () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.nat(), { maxLength: 7 }), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 9 }),
        fc.integer({ min: 0, max: 8 }),
        (perSubtask, parallelism, start) => {
          // At the same parallelism each keeps its own (a case above).
          fc.pre(perSubtask.length !== parallelism);
          // Distinct elements, so the multiset of what arrives names each one.
          let next = 0;
          const numbered = perSubtask.map((elements) => elements.map(() => next++));
          const old = numbered.map((elements) => operatorListState(elements));
          const { states, nextStartSubtask } = repartitionOperatorListState(
            old,
            parallelism,
            "test",
            start % parallelism,
          );
          expect(states).toHaveLength(parallelism);
          const arrived = states.flatMap((state) => state.elements as number[]);
          expect(arrived.sort((a, b) => a - b)).toEqual(numbered.flat());
          const sizes = states.map((state) => state.elements.length);
          expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
          expect(nextStartSubtask).toBeGreaterThanOrEqual(0);
          expect(nextStartSubtask).toBeLessThan(parallelism);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("redistributeTaskState", () => {
  it("gives every key group of a keyed snapshot to the one new subtask that owns it, wherever it is in the state", () => {
    const filled = new Set([0, 5, 40, 63, 64, 100, 127]);
    const old = keyedAt(2, filled).map((keyed) => ({ keyed }) as unknown as JsonValue);
    for (const parallelism of [3, 1]) {
      const states = redistribute(old, parallelism) as { keyed: KeyedStateSnapshot }[];
      const seen = states.flatMap((state, i) => {
        const range = computeKeyGroupRangeForOperatorIndex(MAX_P, parallelism, i);
        expect(state.keyed.keyGroupRange).toEqual({
          start: range.startKeyGroup,
          end: range.endKeyGroup,
        });
        return state.keyed.keyGroups.map((group) => group.keyGroup);
      });
      expect(seen.sort((a, b) => a - b)).toEqual([...filled].sort((a, b) => a - b));
    }
  });

  it("keeps the layout fields of a typed job's chain state and redistributes its operators' keyed and list states", () => {
    const filled = new Set([1, 90]);
    const old = keyedAt(2, filled).map(
      (keyed, i) =>
        ({
          format: "sluice-datastream-chain",
          version: 1,
          operatorState: { collect: list([`records of ${i}`], "SPLIT_DISTRIBUTE") },
          keyedState: { count: keyed },
        }) as unknown as JsonValue,
    );
    const states = redistribute(old, 3) as {
      format: string;
      version: number;
      operatorState: { collect: OperatorListStateSnapshot };
      keyedState: { count: KeyedStateSnapshot };
    }[];
    for (const state of states) {
      expect(state.format).toBe("sluice-datastream-chain");
      expect(state.version).toBe(1);
    }
    expect(states.flatMap((s) => s.operatorState.collect.elements).sort()).toEqual([
      "records of 0",
      "records of 1",
    ]);
    expect(states.flatMap((s) => s.keyedState.count.keyGroups.map((g) => g.keyGroup))).toEqual([
      1, 90,
    ]);
  });

  it("gives nothing when no old subtask stored anything", () => {
    expect(redistribute([undefined, null], 3)).toEqual([undefined, undefined, undefined]);
  });

  it("refuses, naming the vertex and the place in the state, a value only its own subtask can hold (a source's offset)", () => {
    const old = [{ source: { offset: 10 } }, { source: { offset: 12 } }];
    expect(() => redistributeTaskState(old, target(0, 3))).toThrowError(
      expect.objectContaining({
        code: ErrorCodes.STATE_ASSIGNMENT,
        name: "StateAssignmentError",
        message: expect.stringMatching(
          /^Count \(1\/3\): the state at "source\.offset" of old subtask 0 is a number \(10\), which only that subtask can hold: it cannot be redistributed from parallelism 2 to 3/,
        ),
      }),
    );
  });

  it("refuses layout fields the old subtasks disagree on, and one place holding keyed state in one subtask and something else in another", () => {
    expect(() =>
      redistributeTaskState([{ format: "a" }, { format: "b" }], target(0, 1)),
    ).toThrowError(/the state at "format" differs between the old subtasks \("a", "b"\)/);
    const [keyed] = keyedAt(2, new Set());
    expect(() =>
      redistributeTaskState(
        [{ s: keyed as unknown as JsonValue }, { s: list([], "UNION") }],
        target(0, 1),
      ),
    ).toThrowError(/the state at "s" is a keyed state snapshot in some old subtasks but an object/);
  });

  it("refuses an operator list state stored with two modes", () => {
    expect(() =>
      redistributeTaskState(
        [{ s: list([1], "UNION") }, { s: list([2], "SPLIT_DISTRIBUTE") }],
        target(0, 3),
      ),
    ).toThrowError(expect.objectContaining({ code: ErrorCodes.STATE_ASSIGNMENT }));
  });
});
