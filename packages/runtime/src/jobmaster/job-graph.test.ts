import { ErrorCodes } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  consumedPartitionsOf,
  type JobEdgeSpec,
  JobGraph,
  type JobVertex,
  numberOfSubpartitions,
} from "./job-graph.js";

const BLOCKING = ResultPartitionType.BLOCKING;
const invalid = (text: string) =>
  expect.objectContaining({
    code: ErrorCodes.INVALID_ARGUMENT,
    message: expect.stringContaining(text),
  });

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
    const invalidCount = (text: string) =>
      expect.objectContaining({
        code: ErrorCodes.INVALID_ARGUMENT,
        message: expect.stringMatching(new RegExp(`numberOfSubpartitions .*"B".*${text}`)),
      });
    const connect = (spec: Partial<JobEdgeSpec>) =>
      graph.connect(a, b, { partitioner: { name: "REBALANCE" }, serializer: "json", ...spec });
    expect(() => connect({ distributionPattern: "POINTWISE", numberOfSubpartitions: 6 })).toThrow(
      invalidCount("only ALL_TO_ALL"),
    );
    expect(() => connect({ numberOfSubpartitions: 2 })).toThrow(invalidCount("parallelism 3"));
    expect(() =>
      connect({ partitioner: { name: "HASH", keySelector: "value" }, numberOfSubpartitions: 17 }),
    ).toThrow(invalidCount("max parallelism 16"));
    expect(numberOfSubpartitions(connect({ numberOfSubpartitions: 17 }), 0)).toBe(17);
  });
});

describe("JobGraph data sets", () => {
  it("lets several vertices read one blocking data set, and one vertex read it twice, all with its one id", () => {
    const graph = new JobGraph("j");
    const source = graph.addVertex({ name: "Source", parallelism: 2 });
    const count = graph.addVertex({ name: "Count", parallelism: 3 });
    const audit = graph.addVertex({ name: "Audit", parallelism: 3 });
    const words = graph.createDataSet(source, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
      partitionType: BLOCKING,
    });
    const toCount = graph.connectDataSet(words, count);
    const toAudit = graph.connectDataSet(words, audit);
    const again = graph.connectDataSet(words, audit);
    expect(graph.dataSets).toEqual([words]);
    expect(words.consumers).toEqual([toCount, toAudit, again]);
    for (const edge of words.consumers) {
      expect(edge.dataSet).toBe(words);
      expect(edge.resultId).toBe(words.id);
      expect(edge.partitionType).toBe(BLOCKING);
    }
    expect(graph.producedDataSetsOf(source)).toEqual([words]);
    expect(graph.inputsOf(audit)).toEqual([toAudit, again]);
  });

  it("refuses a second reader of a pipelined data set and readers that would read a shared one differently, naming why", () => {
    const graph = new JobGraph("j");
    const source = graph.addVertex({ name: "Source", parallelism: 2 });
    const a = graph.addVertex({ name: "A", parallelism: 2, maxParallelism: 128 });
    const b = graph.addVertex({ name: "B", parallelism: 2, maxParallelism: 256 });
    const c = graph.addVertex({ name: "C", parallelism: 3 });
    const streamed = graph.connect(source, a, {
      partitioner: { name: "REBALANCE" },
      serializer: "json",
    });
    expect(() => graph.connectDataSet(streamed.dataSet, c)).toThrow(
      invalid("a pipelined partition can be consumed only once"),
    );
    const keyed = graph.connect(source, a, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "json",
      partitionType: BLOCKING,
    });
    expect(() => graph.connectDataSet(keyed.dataSet, c)).toThrow(invalid("parallelism 3 differs"));
    expect(() => graph.connectDataSet(keyed.dataSet, b)).toThrow(invalid("maxParallelism 256"));
    expect(() =>
      graph.connectDataSet(keyed.dataSet, a, { distributionPattern: "POINTWISE" }),
    ).toThrow(invalid("distribution pattern POINTWISE"));
    expect(() => graph.connectDataSet(keyed.dataSet, a, { numberOfSubpartitions: 4 })).toThrow(
      invalid("numberOfSubpartitions 4 differs"),
    );
    expect(() => new JobGraph("other").connectDataSet(keyed.dataSet, a)).toThrow(
      invalid("is not part of job other"),
    );
    expect(keyed.dataSet.consumers).toHaveLength(1);
  });

  it("leaves the graph unchanged when connect refuses an edge", () => {
    const graph = new JobGraph("j");
    const a = graph.addVertex({ name: "A", parallelism: 2 });
    const b = graph.addVertex({ name: "B", parallelism: 2 });
    graph.connect(a, b, { partitioner: { name: "REBALANCE" }, serializer: "json" });
    expect(() =>
      graph.connect(b, a, { partitioner: { name: "REBALANCE" }, serializer: "json" }),
    ).toThrow(invalid("cyclic"));
    expect(graph.dataSets).toHaveLength(1);
    expect(graph.edges).toHaveLength(1);
  });

  it("describes a vertex's inputs and outputs for the ShuffleMaster, counting a data set read by two of its gates twice", () => {
    const graph = new JobGraph("j");
    const source = graph.addVertex({ name: "Source", parallelism: 2 });
    const join = graph.addVertex({ name: "Join", parallelism: 3 });
    const sink = graph.addVertex({ name: "Sink", parallelism: 4 });
    const words = graph.createDataSet(source, {
      partitioner: { name: "REBALANCE" },
      serializer: "string",
      partitionType: BLOCKING,
    });
    graph.connectDataSet(words, join);
    graph.connectDataSet(words, join);
    graph.connect(join, sink, { partitioner: { name: "REBALANCE" }, serializer: "string" });
    const key = words.id.toString();
    const described = graph.inputsOutputsOf(join);
    expect(described.inputGateNums).toBe(2);
    expect(described.inputChannelNums).toEqual({ [key]: 2 });
    expect(described.partitionReuseCount).toEqual({ [key]: 2 });
    expect(described.inputPartitionTypes).toEqual({ [key]: BLOCKING });
    expect(Object.values(described.subpartitionNums)).toEqual([4]);
    expect(graph.inputsOutputsOf(source).subpartitionNums).toEqual({ [key]: 3 });
  });
});

/** Vertices A, B, C and D of `graph`. */
function vertices(
  graph: JobGraph,
  parallelism: number,
): [JobVertex, JobVertex, JobVertex, JobVertex] {
  const add = (name: string) => graph.addVertex({ name, parallelism });
  return [add("A"), add("B"), add("C"), add("D")];
}

describe("JobGraph pipelined regions", () => {
  const names = (graph: JobGraph) => graph.pipelinedRegions().map((r) => r.map((v) => v.name));

  it("puts vertices joined by pipelined edges into one region and splits regions at blocking edges", () => {
    const graph = new JobGraph("j");
    const [a, b, c, d] = vertices(graph, 2);
    const spec = { partitioner: { name: "REBALANCE" as const }, serializer: "json" };
    graph.connect(a, b, { ...spec, partitionType: BLOCKING });
    graph.connect(c, b, spec);
    graph.connect(b, d, { ...spec, partitionType: BLOCKING });
    expect(names(graph)).toEqual([["A"], ["C", "B"], ["D"]]);
  });

  it("merges regions that would wait for each other through blocking edges, so none waits forever", () => {
    const graph = new JobGraph("j");
    const [a, b, c, d] = vertices(graph, 1);
    const spec = { partitioner: { name: "REBALANCE" as const }, serializer: "json" };
    // A and C are one region; B reads A after A finished, and C reads B after B finished.
    graph.connect(a, c, spec);
    graph.connect(a, b, { ...spec, partitionType: BLOCKING });
    graph.connect(b, c, { ...spec, partitionType: BLOCKING });
    graph.connect(c, d, { ...spec, partitionType: BLOCKING });
    expect(names(graph)).toEqual([["A", "B", "C"], ["D"]]);
  });
});
