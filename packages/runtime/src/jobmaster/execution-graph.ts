import { ExecutionAttemptID, ExecutionGraphID, IllegalStateError } from "@sluice/core";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import type { JobGraph, JobVertex } from "./job-graph.js";
import type { Placement, PlacementContext } from "./placement.js";

/**
 * The subtasks of one job and their current attempts (Flink's `ExecutionGraph`, without its
 * scheduling): every vertex's {@link ExecutionVertex}es, found by vertex or by attempt id. The
 * objects stay the same across attempts, so references callers hold see the new attempt.
 */
export class ExecutionGraph {
  /** The job graph it executes. */
  readonly graph: JobGraph;
  private readonly executionGraphId = new ExecutionGraphID();
  private readonly vertices = new Map<JobVertex, ExecutionVertex[]>();
  private readonly byAttempt = new Map<string, ExecutionVertex>();

  constructor(graph: JobGraph) {
    this.graph = graph;
  }

  /** Every subtask of the job, vertex by vertex. */
  get executionVertices(): readonly ExecutionVertex[] {
    return [...this.vertices.values()].flat();
  }

  /** Every vertex's subtasks, in subtask order (empty before the first placement). */
  get executionsByVertex(): ReadonlyMap<JobVertex, readonly ExecutionVertex[]> {
    return this.vertices;
  }

  /** The subtasks of `vertex`, in subtask order. */
  subtasksOf(vertex: JobVertex): ExecutionVertex[] {
    return this.vertices.get(vertex) ?? [];
  }

  /** The subtask whose current attempt is `attemptId`; `undefined` for an older attempt. */
  currentExecution(attemptId: ExecutionAttemptID): ExecutionVertex | undefined {
    return this.byAttempt.get(attemptId.toString());
  }

  /**
   * Asks `placement` for every subtask's TaskExecutor and gives each its attempt `attemptNumber`.
   * A placement that returns a lost TaskExecutor (`isLost`) throws an IllegalStateError; a
   * failed placement leaves the previous attempt in place.
   */
  async placeExecutions(
    placement: Placement,
    attemptNumber: number,
    isLost: (gateway: TaskExecutorGateway) => boolean,
  ): Promise<void> {
    const placed: [JobVertex, ExecutionVertex[]][] = [];
    for (const vertex of this.graph.vertices) {
      const previous = this.vertices.get(vertex);
      const subtasks: ExecutionVertex[] = [];
      for (let i = 0; i < vertex.parallelism; i++) {
        const context: PlacementContext = {
          attemptNumber,
          ...(previous === undefined ? {} : { previous: (previous[i] as ExecutionVertex).gateway }),
          isLost,
        };
        const gateway = await placement(vertex, i, context);
        if (isLost(gateway)) {
          throw new IllegalStateError(
            `the placement put ${vertex.name} (${i + 1}/${vertex.parallelism}) of job ${this.graph.name} on TaskExecutor ${gateway.location.resourceId}, which was lost; it must return a replacement`,
          );
        }
        subtasks.push({
          vertex,
          subtaskIndex: i,
          attemptId: new ExecutionAttemptID(this.executionGraphId, vertex.id, i, attemptNumber),
          gateway,
          name: `${vertex.name} (${i + 1}/${vertex.parallelism})#${attemptNumber}`,
          state: "CREATED",
        });
      }
      placed.push([vertex, subtasks]);
    }
    // Swapped in only once every subtask is placed: a failed placement leaves the old attempt.
    this.byAttempt.clear();
    for (const [vertex, subtasks] of placed) {
      const existing = this.vertices.get(vertex);
      if (existing === undefined) this.vertices.set(vertex, subtasks);
      subtasks.forEach((next, i) => {
        // The same objects across attempts, so references callers hold see the new attempt.
        const execution = existing?.[i] ?? next;
        execution.attemptId = next.attemptId;
        execution.gateway = next.gateway;
        execution.name = next.name;
        execution.state = "CREATED";
        delete execution.result;
        delete execution.failureCause;
        delete execution.serializers;
        this.byAttempt.set(execution.attemptId.toString(), execution);
      });
    }
  }
}
