import { assignKeyToParallelOperator } from "@sluice/runtime";
import { describe, expect, it } from "vitest";
import { verifyAtLeastOnce, verifyCounts } from "./verification.js";

const MAX_PARALLELISM = 128;

/** Splits `counts` over two subtasks the way the keyed exchange must. */
function routed(counts: Map<string, number>): Map<string, number>[] {
  const bySubtask = [new Map<string, number>(), new Map<string, number>()];
  for (const [word, count] of counts) {
    bySubtask[assignKeyToParallelOperator(word, MAX_PARALLELISM, 2)]?.set(word, count);
  }
  return bySubtask;
}

describe("verifyCounts", () => {
  const reference = new Map([
    ["alpha", 5],
    ["beta", 3],
    ["gamma", 1],
    ["delta", 8],
  ]);

  it("accepts counts that equal the reference, each word on its owning subtask", () => {
    expect(verifyCounts(reference, routed(reference), MAX_PARALLELISM)).toEqual({
      verified: true,
      differences: [],
      distinctWords: 4,
    });
  });

  it("reports a lost, a duplicated and an unknown word", () => {
    const counts = new Map(reference);
    counts.set("alpha", 4);
    counts.set("beta", 4);
    counts.set("zeta", 1);
    const result = verifyCounts(reference, routed(counts), MAX_PARALLELISM);
    expect(result.verified).toBe(false);
    expect(result.differences).toEqual(
      expect.arrayContaining([
        '"alpha": expected 5, counted 4 (-1)',
        '"beta": expected 3, counted 4 (+1)',
        '"zeta": not in the corpus, counted 1',
      ]),
    );
  });

  it("reports a word counted by a subtask that does not own its key group", () => {
    const bySubtask = routed(reference);
    const owner = assignKeyToParallelOperator("alpha", MAX_PARALLELISM, 2);
    bySubtask[owner]?.delete("alpha");
    bySubtask[1 - owner]?.set("alpha", 5);
    const result = verifyCounts(reference, bySubtask, MAX_PARALLELISM);
    expect(result.verified).toBe(false);
    expect(result.differences).toEqual([
      `"alpha" was counted by count subtask ${2 - owner}, but its key group belongs to subtask ${owner + 1}`,
    ]);
  });

  it("lists at most the first differences", () => {
    const result = verifyCounts(reference, [new Map(), new Map()], MAX_PARALLELISM, 2);
    expect(result.differences).toHaveLength(3);
    expect(result.differences[2]).toBe("... and 2 more");
  });
});

describe("verifyAtLeastOnce", () => {
  const reference = new Map([
    ["alpha", 5],
    ["beta", 3],
    ["gamma", 1],
  ]);

  it("accepts words counted more often than the corpus holds them, and counts the excess", () => {
    const counted = new Map([
      ["alpha", 7],
      ["beta", 3],
      ["gamma", 2],
    ]);
    expect(verifyAtLeastOnce(reference, routed(counted), MAX_PARALLELISM)).toEqual({
      verified: true,
      differences: [],
      distinctWords: 3,
      duplicates: 3,
    });
  });

  it("refuses a lost word, naming it", () => {
    const counted = new Map([
      ["alpha", 9],
      ["beta", 2],
      ["gamma", 1],
    ]);
    const verification = verifyAtLeastOnce(reference, routed(counted), MAX_PARALLELISM);
    expect(verification.verified).toBe(false);
    expect(verification.differences).toEqual(['"beta": expected 3, counted 2 (-1)']);
    expect(verification.duplicates).toBe(4);
  });

  it("still counts an exact run's words exactly in verifyCounts", () => {
    const counted = new Map([...reference, ["alpha", 6]]);
    expect(verifyCounts(reference, routed(counted), MAX_PARALLELISM).differences).toEqual([
      '"alpha": expected 5, counted 6 (+1)',
    ]);
  });
});
