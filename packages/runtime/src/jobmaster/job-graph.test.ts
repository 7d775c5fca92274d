import { ErrorCodes } from "@sluice/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  consumedPartitionsOf,
  type JobEdgeSpec,
  JobGraph,
  numberOfSubpartitions,
} from "./job-graph.js";

function edge(p: number, q: number, pattern: "ALL_TO_ALL" | "POINTWISE", subpartitions?: number) {
  const graph = new JobGraph("j");
  const source = graph.addVertex({ name: "A", parallelism: p });
  const target = graph.addVertex({ name: "B", parallelism: q });
  return graph.connect(source, target, {
    partitioner: { name: "REBALANCE" },
    serializer: "string",
    distributionPattern: pattern,
    ...(subpartitions === undefined ? {} : { numberOfSubpartitions: subpartitions }),
  });
}

describe("JobGraph connection rules", () => {
  it("reads subpartition j of every producer for ALL_TO_ALL", () => {
    const e = edge(3, 4, "ALL_TO_ALL");
    expect(numberOfSubpartitions(e, 0)).toBe(4);
    expect(consumedPartitionsOf(e, 2)).toEqual({
      producers: [0, 1, 2],
      subpartitions: { start: 2, end: 2 },
    });
  });

  it("gives each consumer an even contiguous range when an ALL_TO_ALL edge has more subpartitions than consumers", () => {
    const e = edge(2, 3, "ALL_TO_ALL", 8);
    expect(numberOfSubpartitions(e, 1)).toBe(8);
    expect([0, 1, 2].map((j) => consumedPartitionsOf(e, j))).toEqual([
      { producers: [0, 1], subpartitions: { start: 0, end: 1 } },
      { producers: [0, 1], subpartitions: { start: 2, end: 4 } },
      { producers: [0, 1], subpartitions: { start: 5, end: 7 } },
    ]);
    expect(consumedPartitionsOf(edge(1, 1, "ALL_TO_ALL", 4), 0).subpartitions).toEqual({
      start: 0,
      end: 3,
    });
  });

  it("splits producers into contiguous runs for POINTWISE with more producers than consumers", () => {
    const e = edge(5, 2, "POINTWISE");
    expect(consumedPartitionsOf(e, 0).producers).toEqual([0, 1]);
    expect(consumedPartitionsOf(e, 1).producers).toEqual([2, 3, 4]);
    expect(numberOfSubpartitions(e, 3)).toBe(1);
  });

  it("gives each consumer its own subpartition of a shared producer for POINTWISE with fewer producers", () => {
    const e = edge(2, 5, "POINTWISE");
    expect([0, 1].map((i) => numberOfSubpartitions(e, i))).toEqual([3, 2]);
    expect([0, 1, 2, 3, 4].map((j) => consumedPartitionsOf(e, j))).toEqual([
      { producers: [0], subpartitions: { start: 0, end: 0 } },
      { producers: [0], subpartitions: { start: 1, end: 1 } },
      { producers: [0], subpartitions: { start: 2, end: 2 } },
      { producers: [1], subpartitions: { start: 0, end: 0 } },
      { producers: [1], subpartitions: { start: 1, end: 1 } },
    ]);
  });

  it("reads every subpartition of every producer exactly once, for any parallelisms", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 40 }),
        fc.constantFrom("ALL_TO_ALL" as const, "POINTWISE" as const),
        fc.integer({ min: 0, max: 60 }),
        (p, q, pattern, extra) => {
          // ALL_TO_ALL edges also with more subpartitions than consumers.
          const e = pattern === "ALL_TO_ALL" ? edge(p, q, pattern, q + extra) : edge(p, q, pattern);
          const read = new Map<string, number>();
          for (let j = 0; j < q; j++) {
            const { producers, subpartitions } = consumedPartitionsOf(e, j);
            for (const i of producers) {
              for (let s = subpartitions.start; s <= subpartitions.end; s++) {
                read.set(`${i}/${s}`, (read.get(`${i}/${s}`) ?? 0) + 1);
              }
            }
          }
          let total = 0;
          for (let i = 0; i < p; i++) {
            for (let s = 0; s < numberOfSubpartitions(e, i); s++) {
              expect(read.get(`${i}/${s}`)).toBe(1);
              total++;
            }
          }
          expect(read.size).toBe(total);
        },
      ),
    );
  });

  it("defaults FORWARD and RESCALE edges to POINTWISE and others to ALL_TO_ALL", () => {
    const graph = new JobGraph("j");
    const a = graph.addVertex({ name: "A", parallelism: 2 });
    const b = graph.addVertex({ name: "B", parallelism: 2 });
    const c = graph.addVertex({ name: "C", parallelism: 2 });
    const forward = graph.connect(a, b, { partitioner: { name: "FORWARD" }, serializer: "json" });
    const hash = graph.connect(b, c, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "json",
    });
    expect([forward.distributionPattern, hash.distributionPattern]).toEqual([
      "POINTWISE",
      "ALL_TO_ALL",
    ]);
    expect(graph.topologicalOrder().map((v) => v.name)).toEqual(["A", "B", "C"]);
  });

  it("refuses cycles, FORWARD between different parallelisms and duplicate names, naming them", () => {
    const graph = new JobGraph("j");
    const a = graph.addVertex({ name: "A", parallelism: 2 });
    const b = graph.addVertex({ name: "B", parallelism: 3 });
    graph.connect(a, b, { partitioner: { name: "REBALANCE" }, serializer: "json" });
    const invalid = { code: ErrorCodes.INVALID_ARGUMENT };
    expect(() =>
      graph.connect(b, a, { partitioner: { name: "REBALANCE" }, serializer: "json" }),
    ).toThrow(expect.objectContaining({ ...invalid, message: expect.stringContaining("cyclic") }));
    expect(() =>
      graph.connect(a, b, { partitioner: { name: "FORWARD" }, serializer: "json" }),
    ).toThrow(
      expect.objectContaining({
        ...invalid,
        message: expect.stringContaining("equal parallelism"),
      }),
    );
    expect(() => graph.addVertex({ name: "A", parallelism: 1 })).toThrow(
      expect.objectContaining({ ...invalid, message: expect.stringContaining('"A"') }),
    );
    expect(() => graph.addVertex({ name: "C", parallelism: 0 })).toThrow(
      expect.objectContaining(invalid),
    );
  });

  it("refuses a number of subpartitions on POINTWISE edges, below the consumers or above HASH's key groups, naming the edge", () => {
    const graph = new JobGraph("j");
    const a = graph.addVertex({ name: "A", parallelism: 2 });
    const b = graph.addVertex({ name: "B", parallelism: 3, maxParallelism: 16 });
    const invalid = (text: string) =>
      expect.objectContaining({
        code: ErrorCodes.INVALID_ARGUMENT,
        message: expect.stringMatching(new RegExp(`numberOfSubpartitions .*"B".*${text}`)),
      });
    const connect = (spec: Partial<JobEdgeSpec>) =>
      graph.connect(a, b, { partitioner: { name: "REBALANCE" }, serializer: "json", ...spec });
    expect(() => connect({ distributionPattern: "POINTWISE", numberOfSubpartitions: 6 })).toThrow(
      invalid("only ALL_TO_ALL"),
    );
    expect(() => connect({ numberOfSubpartitions: 2 })).toThrow(invalid("parallelism 3"));
    expect(() =>
      connect({ partitioner: { name: "HASH", keySelector: "value" }, numberOfSubpartitions: 17 }),
    ).toThrow(invalid("max parallelism 16"));
    expect(numberOfSubpartitions(connect({ numberOfSubpartitions: 17 }), 0)).toBe(17);
  });
});
