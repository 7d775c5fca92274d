import { SerializationError } from "@sluice/core";
import type { TaskManagerLocation } from "../messages/task-executor-gateway.js";
import type { ExecutionGraph } from "./execution-graph.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import { consumedPartitionsOf, type JobEdge } from "./job-graph.js";

/**
 * A producer and a consumer of `execution` (itself one of them) that both reported their
 * serializers and disagree on an edge between them: each process resolves the edge's
 * serializer name against its own code, and bytes written by one serializer do not decode
 * with another (Flink's serializer compatibility check, by the serializers' names).
 */
export function serializerMismatchOf(
  executions: ExecutionGraph,
  execution: ExecutionVertex,
): { consumer: ExecutionVertex; error: SerializationError } | undefined {
  const { vertex, subtaskIndex } = execution;
  const pairs: [ExecutionVertex, JobEdge, ExecutionVertex][] = [];
  for (const edge of executions.graph.inputsOf(vertex)) {
    for (const producer of consumedPartitionsOf(edge, subtaskIndex).producers) {
      pairs.push([
        executions.subtasksOf(edge.source)[producer] as ExecutionVertex,
        edge,
        execution,
      ]);
    }
  }
  for (const edge of executions.graph.outputsOf(vertex)) {
    for (const consumer of executions.subtasksOf(edge.target)) {
      if (consumedPartitionsOf(edge, consumer.subtaskIndex).producers.includes(subtaskIndex)) {
        pairs.push([execution, edge, consumer]);
      }
    }
  }
  for (const [producer, edge, consumer] of pairs) {
    const output = executions.graph.producedDataSetsOf(edge.source).indexOf(edge.dataSet);
    const written = producer.serializers?.produced[output];
    const read =
      consumer.serializers?.consumed[executions.graph.inputsOf(edge.target).indexOf(edge)];
    if (written === undefined || read === undefined || written === read) continue;
    return {
      consumer,
      error: new SerializationError(
        `serializer mismatch on the edge ${edge.source.name} -> ${edge.target.name} (data set ${edge.resultId}, serializer "${edge.serializer}"): ${producer.name} on ${describeLocation(producer.gateway.location)} writes with ${written}, ${consumer.name} on ${describeLocation(consumer.gateway.location)} reads with ${read}; register the same serializer under "${edge.serializer}" in every process`,
      ),
    };
  }
  return undefined;
}

function describeLocation(location: TaskManagerLocation): string {
  return `TaskExecutor ${location.resourceId} (${location.host}:${location.dataPort})`;
}
