import {
  ErrorCodes,
  ExecutionAttemptID,
  ExecutionGraphID,
  PartitionNotFoundError,
  ResultPartitionID,
} from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import {
  type DistributionPattern,
  type IntermediateDataSet,
  JobGraph,
  type JobVertex,
  partitionIdOf,
} from "../job-graph.js";
import { RestartPipelinedRegionFailoverStrategy } from "./restart-pipelined-region-failover-strategy.js";
import type { SchedulingExecutionVertex } from "./scheduling-pipelined-region.js";
import { SchedulingTopology } from "./scheduling-topology.js";

const { BLOCKING, PIPELINED } = ResultPartitionType;

/** A graph whose vertices are named by letter; `connect` wires them as a test states. */
class TestGraph {
  readonly graph = new JobGraph("failover");

  vertex(name: string, parallelism = 1): JobVertex {
    return this.graph.addVertex({ name, parallelism });
  }

  connect(
    source: JobVertex,
    target: JobVertex,
    partitionType: ResultPartitionType,
    distributionPattern: DistributionPattern = "ALL_TO_ALL",
  ): IntermediateDataSet {
    return this.graph.connect(source, target, {
      partitioner: { name: distributionPattern === "POINTWISE" ? "RESCALE" : "REBALANCE" },
      serializer: "int32",
      partitionType,
      distributionPattern,
    }).dataSet;
  }
}

/** `Name i` (1-based) for each subtask, for readable assertions. */
const names = (vertices: readonly SchedulingExecutionVertex[]) =>
  vertices.map((v) => `${v.vertex.name}${v.subtaskIndex + 1}`);

/** The partition error a consumer reports when it cannot read `dataSet`'s partition `i`. */
function partitionError(dataSet: IntermediateDataSet, producerSubtask: number): Error {
  const attempt = new ExecutionAttemptID(
    new ExecutionGraphID(),
    dataSet.producer.id,
    producerSubtask,
    0,
  );
  return Object.assign(new PartitionNotFoundError("gone"), {
    partitionId: new ResultPartitionID(partitionIdOf(dataSet, producerSubtask), attempt),
  });
}

function strategyOf(test: TestGraph, isTracked?: (id: { toString(): string }) => boolean) {
  const topology = new SchedulingTopology(test.graph);
  const strategy = new RestartPipelinedRegionFailoverStrategy(topology, isTracked);
  const restarts = (vertex: JobVertex, subtask: number, cause: unknown = new Error("boom")) =>
    names(strategy.getTasksNeedingRestart(topology.executionVertex(vertex, subtask), cause));
  return { topology, restarts };
}

describe("SchedulingTopology", () => {
  it("puts every subtask of an ALL_TO_ALL pipelined edge in one region, and each subtask of a blocking edge in its own", () => {
    const t = new TestGraph();
    const a = t.vertex("A", 2);
    const b = t.vertex("B", 2);
    const c = t.vertex("C", 2);
    t.connect(a, b, PIPELINED);
    t.connect(b, c, BLOCKING);
    const { topology } = strategyOf(t);
    expect(topology.regions.map((r) => names(r.vertices))).toEqual([
      ["A1", "A2", "B1", "B2"],
      ["C1"],
      ["C2"],
    ]);
    const [first, c1] = topology.regions;
    expect(c1?.consumedPartitions.map((p) => p.producer.subtaskIndex)).toEqual([0, 1]);
    expect(
      first?.producedPartitions.filter((p) => p.dataSet.partitionType.isBlocking),
    ).toHaveLength(2);
  });

  it("joins only the subtasks a POINTWISE pipelined edge connects", () => {
    const t = new TestGraph();
    const a = t.vertex("A", 4);
    const b = t.vertex("B", 2);
    t.connect(a, b, PIPELINED, "POINTWISE");
    const { topology } = strategyOf(t);
    expect(topology.regions.map((r) => names(r.vertices))).toEqual([
      ["A1", "A2", "B1"],
      ["A3", "A4", "B2"],
    ]);
  });

  it("merges regions that would wait for each other through blocking edges into one", () => {
    const t = new TestGraph();
    const a = t.vertex("A", 2);
    const b = t.vertex("B", 2);
    // {A1,B1} and {A2,B2} by the pipelined edge; the blocking one makes each wait for the other.
    t.connect(a, b, PIPELINED, "POINTWISE");
    t.connect(a, b, BLOCKING);
    const { topology } = strategyOf(t);
    expect(topology.regions.map((r) => names(r.vertices))).toEqual([["A1", "A2", "B1", "B2"]]);
  });
});

describe("RestartPipelinedRegionFailoverStrategy", () => {
  /**
   * (A1) -+-> (B1)
   *       x
   * (A2) -+-> (B2)
   *
   * (C1) ---> (D1)      all blocking, each subtask its own region
   */
  function internalErrorsGraph() {
    const t = new TestGraph();
    const a = t.vertex("A", 2);
    const b = t.vertex("B", 2);
    const c = t.vertex("C");
    const d = t.vertex("D");
    const ab = t.connect(a, b, BLOCKING);
    const cd = t.connect(c, d, BLOCKING);
    return { t, a, b, c, d, ab, cd };
  }

  it("restarts the failed region and its consumer regions for a task's own error (testRegionFailoverForRegionInternalErrors)", () => {
    const { t, a, b, c, d } = internalErrorsGraph();
    const { restarts } = strategyOf(t);
    expect(restarts(a, 0)).toEqual(["A1", "B1", "B2"]);
    expect(restarts(a, 1)).toEqual(["A2", "B1", "B2"]);
    expect(restarts(c, 0)).toEqual(["C1", "D1"]);
    expect(restarts(b, 0)).toEqual(["B1"]);
    expect(restarts(b, 1)).toEqual(["B2"]);
    expect(restarts(d, 0)).toEqual(["D1"]);
  });

  it("restarts the producer region of the partition a consumer could not read, with all its consumers (testRegionFailoverForDataConsumptionErrors)", () => {
    const { t, b, d, ab, cd } = internalErrorsGraph();
    const { restarts } = strategyOf(t);
    expect(restarts(b, 0, partitionError(ab, 0))).toEqual(["A1", "B1", "B2"]);
    expect(restarts(b, 0, partitionError(ab, 1))).toEqual(["A2", "B1", "B2"]);
    expect(restarts(b, 1, partitionError(ab, 0))).toEqual(["A1", "B1", "B2"]);
    expect(restarts(b, 1, partitionError(ab, 1))).toEqual(["A2", "B1", "B2"]);
    expect(restarts(d, 0, partitionError(cd, 0))).toEqual(["C1", "D1"]);
    // The error is found among the causes, as Flink finds a PartitionException.
    const wrapped = new Error("task failed", { cause: partitionError(cd, 0) });
    expect(restarts(d, 0, wrapped)).toEqual(["C1", "D1"]);
    // Once decided, the partition counts as available again: it is being produced anew.
    expect(restarts(d, 0)).toEqual(["D1"]);
  });

  it("ignores an error that has a partition error's code but names no partition", () => {
    const { t, d } = internalErrorsGraph();
    const { restarts } = strategyOf(t);
    const cause = new PartitionNotFoundError("no id");
    expect(cause.code).toBe(ErrorCodes.PARTITION_NOT_FOUND);
    expect(restarts(d, 0, cause)).toEqual(["D1"]);
  });

  it("restarts the producers of inputs that are not available, by every combination (testRegionFailoverForVariousResultPartitionAvailabilityCombinations)", () => {
    // (V1) --rp1--\
    //             (V3)      blocking; V1, V2 and V3 are each a region
    // (V2) --rp2--/
    const t = new TestGraph();
    const v1 = t.vertex("V1");
    const v2 = t.vertex("V2");
    const v3 = t.vertex("V3");
    const rp1 = partitionIdOf(t.connect(v1, v3, BLOCKING), 0).toString();
    const rp2 = partitionIdOf(t.connect(v2, v3, BLOCKING), 0).toString();
    const failed = new Set<string>();
    const { restarts } = strategyOf(t, (id) => !failed.has(id.toString()));
    const combination = (unavailable: string[]) => {
      failed.clear();
      for (const id of unavailable) failed.add(id);
      return [restarts(v1, 0), restarts(v2, 0), restarts(v3, 0)];
    };
    expect(combination([])).toEqual([["V11", "V31"], ["V21", "V31"], ["V31"]]);
    expect(combination([rp1])).toEqual([
      ["V11", "V31"],
      ["V11", "V21", "V31"],
      ["V11", "V31"],
    ]);
    expect(combination([rp2])).toEqual([
      ["V11", "V21", "V31"],
      ["V21", "V31"],
      ["V21", "V31"],
    ]);
    expect(combination([rp1, rp2])).toEqual([
      ["V11", "V21", "V31"],
      ["V11", "V21", "V31"],
      ["V11", "V21", "V31"],
    ]);
  });

  it("restarts whole regions of several vertices, and everything downstream (testRegionFailoverForMultipleVerticesRegions)", () => {
    // (V1) -> (V2) -|-> (V3) -> (V4) -|-> (V5) -> (V6): pipelined, blocking, pipelined, ...
    const t = new TestGraph();
    const [v1, v2, v3, v4, v5, v6] = ["V1", "V2", "V3", "V4", "V5", "V6"].map((n) => t.vertex(n));
    const all = [v1, v2, v3, v4, v5, v6] as JobVertex[];
    t.connect(all[0] as JobVertex, all[1] as JobVertex, PIPELINED);
    const v2out = t.connect(all[1] as JobVertex, all[2] as JobVertex, BLOCKING);
    t.connect(all[2] as JobVertex, all[3] as JobVertex, PIPELINED);
    t.connect(all[3] as JobVertex, all[4] as JobVertex, BLOCKING);
    t.connect(all[4] as JobVertex, all[5] as JobVertex, PIPELINED);
    const { restarts } = strategyOf(t);
    expect(restarts(v3 as JobVertex, 0)).toEqual(["V31", "V41", "V51", "V61"]);
    expect(restarts(v3 as JobVertex, 0, partitionError(v2out, 0))).toEqual([
      "V11",
      "V21",
      "V31",
      "V41",
      "V51",
      "V61",
    ]);
  });

  it("restarts only the subtasks a POINTWISE blocking edge connects", () => {
    // A1, A2 -> B1; A3, A4 -> B2
    const t = new TestGraph();
    const a = t.vertex("A", 4);
    const b = t.vertex("B", 2);
    const ab = t.connect(a, b, BLOCKING, "POINTWISE");
    const { restarts } = strategyOf(t);
    expect(restarts(a, 2)).toEqual(["A3", "B2"]);
    expect(restarts(b, 0)).toEqual(["B1"]);
    expect(restarts(b, 0, partitionError(ab, 1))).toEqual(["A2", "B1"]);
  });

  it("re-runs the producer of a lost input of a vertex with several inputs, and every reader of it", () => {
    // Words (2) and Stop (1) both blocking into Join (2); Join pipelined into Sink (2) POINTWISE.
    const t = new TestGraph();
    const words = t.vertex("Words", 2);
    const stop = t.vertex("Stop");
    const join = t.vertex("Join", 2);
    const sink = t.vertex("Sink", 2);
    t.connect(words, join, BLOCKING);
    const stopOut = t.connect(stop, join, BLOCKING);
    t.connect(join, sink, PIPELINED, "POINTWISE");
    const lost = partitionIdOf(stopOut, 0).toString();
    const { restarts } = strategyOf(t, (id) => id.toString() !== lost);
    expect(restarts(join, 1)).toEqual(["Stop1", "Join1", "Join2", "Sink1", "Sink2"]);
    const { restarts: allAvailable } = strategyOf(t);
    expect(allAvailable(join, 1)).toEqual(["Join2", "Sink2"]);
    expect(allAvailable(words, 1)).toEqual(["Words2", "Join1", "Join2", "Sink1", "Sink2"]);
  });
});
