import { ErrorCodes } from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyGroupRange } from "../partitioner/key-group-range.js";
import { computeKeyGroupRangeForOperatorIndex } from "../partitioner/key-group-range-assignment.js";
import type { KeyedStateSnapshot } from "./keyed-state-snapshot.js";
import { assignKeyedStateToSubtasks, redistributeKeyedState } from "./redistribute-keyed-state.js";

/** Snapshots of `parallelism` subtasks whose key group `g` holds the made-up bytes `kg<g>`. */
function snapshotsAt(maxParallelism: number, parallelism: number, filled: ReadonlySet<number>) {
  return Array.from({ length: parallelism }, (_, i): KeyedStateSnapshot => {
    const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, parallelism, i);
    return {
      format: "sluice-keyed-state",
      version: 1,
      maxParallelism,
      keyGroupRange: { start: range.startKeyGroup, end: range.endKeyGroup },
      keySerializer: "string",
      states: [{ name: "count", type: "VALUE", serializers: ["float64"] }],
      keyGroups: [...range]
        .filter((g) => filled.has(g))
        .map((g) => ({ keyGroup: g, states: { count: `kg${g}` } })),
    };
  });
}

describe("redistributeKeyedState", () => {
  it("gives every key group to exactly the new subtask that owns it, whole and undecoded, at any old and new parallelism", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        (maxParallelism, p1, p2, picks) => {
          fc.pre(p1 <= maxParallelism && p2 <= maxParallelism);
          const filled = new Set(picks.map((n) => n % maxParallelism));
          const old = snapshotsAt(maxParallelism, p1, filled);
          const assigned = assignKeyedStateToSubtasks(old, p2);
          const seen: number[] = [];
          for (const [i, snapshot] of assigned.entries()) {
            const range = computeKeyGroupRangeForOperatorIndex(maxParallelism, p2, i);
            expect(snapshot.keyGroupRange).toEqual({
              start: range.startKeyGroup,
              end: range.endKeyGroup,
            });
            for (const group of snapshot.keyGroups) {
              expect(range.contains(group.keyGroup)).toBe(true);
              expect(group.states).toEqual({ count: `kg${group.keyGroup}` });
              seen.push(group.keyGroup);
            }
          }
          expect(seen).toEqual([...filled].sort((a, b) => a - b));
          // A pure function: the same input, the same output.
          expect(assignKeyedStateToSubtasks(old, p2)).toEqual(assigned);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("refuses two snapshots that hold the same key group", () => {
    const [a] = snapshotsAt(128, 1, new Set([5])) as [KeyedStateSnapshot];
    expect(() => redistributeKeyedState([a, a], new KeyGroupRange(0, 127))).toThrow(
      expect.objectContaining({
        code: ErrorCodes.KEYED_STATE,
        message: expect.stringContaining("key group 5 is in two keyed state snapshots"),
      }),
    );
  });

  it("refuses snapshots of different max parallelism, key serializer or state serializers", () => {
    const [a] = snapshotsAt(128, 1, new Set([1])) as [KeyedStateSnapshot];
    const [b] = snapshotsAt(256, 2, new Set([200])) as [KeyedStateSnapshot];
    expect(() => redistributeKeyedState([a, b], new KeyGroupRange(0, 127))).toThrow(
      /max parallelism 256, snapshot 0 has 128/,
    );
    const json = { ...a, keyGroups: [], keySerializer: "json" };
    expect(() => redistributeKeyedState([a, json], new KeyGroupRange(0, 127))).toThrow(
      /key serializer "json", snapshot 0 has "string"/,
    );
    const other = {
      ...a,
      keyGroups: [],
      states: [{ name: "count", type: "VALUE" as const, serializers: ["int64"] }],
    };
    expect(() => redistributeKeyedState([a, other], new KeyGroupRange(0, 127))).toThrow(
      /state "count" is VALUE of \[int64\] in keyed state snapshot 1 but VALUE of \[float64\]/,
    );
  });

  it("refuses what is not a keyed state snapshot of this version, naming what it saw", () => {
    const [a] = snapshotsAt(128, 1, new Set([1])) as [KeyedStateSnapshot];
    expect(() => redistributeKeyedState([{ offset: 3 }], new KeyGroupRange(0, 127))).toThrow(
      /keyed state snapshot 0: not a keyed state snapshot this release reads: its format is not "sluice-keyed-state"/,
    );
    expect(() => redistributeKeyedState([{ ...a, version: 2 }], new KeyGroupRange(0, 127))).toThrow(
      /version 2, this release reads 1/,
    );
    expect(() =>
      redistributeKeyedState(
        [{ ...a, keyGroups: [{ keyGroup: 200, states: {} }] }],
        new KeyGroupRange(0, 127),
      ),
    ).toThrow(/key group entry 200/);
  });
});
