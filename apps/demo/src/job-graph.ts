import {
  ExecutionAttemptID,
  ExecutionGraphID,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  JobVertexID,
} from "@sluice/core";
import { computeDefaultMaxParallelism } from "@sluice/runtime";
import type { CorpusSpec } from "./corpus.js";

/** The two operators of the word count. */
export type TaskKind = "source" | "count";

/** One subtask of the job and where it runs. */
export interface TaskVertex {
  readonly kind: TaskKind;
  /** Flink-style name, e.g. `Source: Words (1/2)#0`. */
  readonly name: string;
  readonly subtaskIndex: number;
  readonly attemptId: ExecutionAttemptID;
  /** Index of the task manager the subtask is placed on. */
  readonly taskManager: number;
}

/**
 * The word count's job graph (Flink's JobGraph + ExecutionGraph in one): P source subtasks
 * producing one PIPELINED_BOUNDED partition each, with P subpartitions (one per count subtask),
 * consumed all-to-all by P count subtasks through a key-group hash exchange.
 */
export interface JobGraph {
  readonly jobId: JobID;
  readonly executionGraphId: ExecutionGraphID;
  readonly parallelism: number;
  /** Key groups of the keyed exchange (Flink's default for the count operator's parallelism). */
  readonly maxParallelism: number;
  readonly taskManagers: number;
  /** The data set the sources produce and the counters consume. */
  readonly resultId: IntermediateDataSetID;
  readonly sources: readonly TaskVertex[];
  readonly counters: readonly TaskVertex[];
  readonly corpus: CorpusSpec;
}

export interface JobGraphOptions {
  readonly parallelism: number;
  readonly taskManagers: number;
  readonly records: number;
  readonly seed: number;
}

/** Round-robin placement of subtask `index` over `taskManagers` workers. */
export function placeOnTaskManager(index: number, taskManagers: number): number {
  return index % taskManagers;
}

function vertex(
  kind: TaskKind,
  operatorName: string,
  graphId: ExecutionGraphID,
  vertexId: JobVertexID,
  subtaskIndex: number,
  parallelism: number,
  taskManagers: number,
): TaskVertex {
  const attemptId = new ExecutionAttemptID(graphId, vertexId, subtaskIndex, 0);
  return Object.freeze({
    kind,
    name: `${operatorName} (${subtaskIndex + 1}/${parallelism})#${attemptId.attemptNumber}`,
    subtaskIndex,
    attemptId,
    taskManager: placeOnTaskManager(subtaskIndex, taskManagers),
  });
}

/** Builds the job: ids, subtasks and their placement. */
export function buildJobGraph(options: JobGraphOptions): JobGraph {
  const { parallelism, taskManagers } = options;
  const executionGraphId = new ExecutionGraphID();
  const sourceVertex = new JobVertexID();
  const countVertex = new JobVertexID();
  const range = Array.from({ length: parallelism }, (_, i) => i);
  return Object.freeze({
    jobId: new JobID(),
    executionGraphId,
    parallelism,
    maxParallelism: computeDefaultMaxParallelism(parallelism),
    taskManagers,
    resultId: new IntermediateDataSetID(),
    sources: range.map((i) =>
      vertex(
        "source",
        "Source: Words -> Tokenize",
        executionGraphId,
        sourceVertex,
        i,
        parallelism,
        taskManagers,
      ),
    ),
    counters: range.map((i) =>
      vertex("count", "Count", executionGraphId, countVertex, i, parallelism, taskManagers),
    ),
    corpus: Object.freeze({ seed: options.seed, records: options.records, parallelism }),
  });
}

/** The partition source subtask `subtaskIndex` produces. */
export function partitionIdOf(
  graph: JobGraph,
  subtaskIndex: number,
): IntermediateResultPartitionID {
  return new IntermediateResultPartitionID(graph.resultId, subtaskIndex);
}

/** The subtasks placed on one task manager. */
export function tasksOn(graph: JobGraph, taskManager: number): TaskVertex[] {
  return [...graph.sources, ...graph.counters].filter((task) => task.taskManager === taskManager);
}
