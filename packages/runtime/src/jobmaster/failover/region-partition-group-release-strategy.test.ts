import { ResultPartitionType } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { JobGraph, type JobVertex, partitionIdOf } from "../job-graph.js";
import { RegionPartitionGroupReleaseStrategy } from "./region-partition-group-release-strategy.js";
import { SchedulingTopology } from "./scheduling-topology.js";

const { BLOCKING, BLOCKING_PERSISTENT, PIPELINED } = ResultPartitionType;
const REBALANCE = { partitioner: { name: "REBALANCE" as const }, serializer: "int32" };

function strategyOf(graph: JobGraph) {
  const topology = new SchedulingTopology(graph);
  const strategy = new RegionPartitionGroupReleaseStrategy(topology);
  const at = (vertex: JobVertex, subtask = 0) => topology.executionVertex(vertex, subtask);
  const finished = (vertex: JobVertex, subtask = 0) =>
    strategy.vertexFinished(at(vertex, subtask)).map((partition) => partition.id.toString());
  return { strategy, at, finished };
}

describe("RegionPartitionGroupReleaseStrategy", () => {
  it("releases a partition once its reading region finished (releasePartitionsIfDownstreamRegionIsFinished)", () => {
    const graph = new JobGraph("release");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const consumer = graph.addVertex({ name: "Consumer", parallelism: 1 });
    const edge = graph.connect(producer, consumer, { ...REBALANCE, partitionType: BLOCKING });
    const { finished } = strategyOf(graph);
    expect(finished(producer)).toEqual([]);
    expect(finished(consumer)).toEqual([partitionIdOf(edge, 0).toString()]);
  });

  it("releases it only once every vertex of the reading region finished (releasePartitionsIfDownstreamRegionWithMultipleOperatorsIsFinished)", () => {
    const graph = new JobGraph("release");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const consumer = graph.addVertex({ name: "Consumer", parallelism: 1 });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1 });
    const edge = graph.connect(producer, consumer, { ...REBALANCE, partitionType: BLOCKING });
    graph.connect(consumer, sink, { ...REBALANCE, partitionType: PIPELINED });
    const { finished } = strategyOf(graph);
    finished(producer);
    expect(finished(consumer)).toEqual([]);
    expect(finished(sink)).toEqual([partitionIdOf(edge, 0).toString()]);
  });

  it("keeps a partition while one of its reading regions has not finished (notReleasePartitionsIfDownstreamRegionIsNotFinished)", () => {
    const graph = new JobGraph("release");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const first = graph.addVertex({ name: "First", parallelism: 2 });
    const edge = graph.connect(producer, first, { ...REBALANCE, partitionType: BLOCKING });
    const second = graph.addVertex({ name: "Second", parallelism: 2 });
    graph.connectDataSet(edge.dataSet, second);
    const { finished } = strategyOf(graph);
    finished(producer);
    expect(finished(first, 0)).toEqual([]);
    expect(finished(first, 1)).toEqual([]);
    expect(finished(second, 0)).toEqual([]);
    expect(finished(second, 1)).toEqual([partitionIdOf(edge, 0).toString()]);
  });

  it("keeps the partitions of a region that re-runs after it finished (toggleVertexFinishedUnfinished)", () => {
    const graph = new JobGraph("release");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const consumer = graph.addVertex({ name: "Consumer", parallelism: 2 });
    const edge = graph.connect(producer, consumer, { ...REBALANCE, partitionType: BLOCKING });
    const { strategy, at, finished } = strategyOf(graph);
    finished(consumer, 0);
    strategy.vertexUnfinished(at(consumer, 0));
    expect(finished(consumer, 1)).toEqual([]);
    expect(finished(consumer, 0)).toEqual([partitionIdOf(edge, 0).toString()]);
  });

  it("never releases a BLOCKING_PERSISTENT partition early: the job releases it at its end", () => {
    const graph = new JobGraph("release");
    const producer = graph.addVertex({ name: "Producer", parallelism: 1 });
    const consumer = graph.addVertex({ name: "Consumer", parallelism: 1 });
    graph.connect(producer, consumer, { ...REBALANCE, partitionType: BLOCKING_PERSISTENT });
    const { finished } = strategyOf(graph);
    finished(producer);
    expect(finished(consumer)).toEqual([]);
  });
});
