import { ExecutionAttemptID, ExecutionGraphID, IllegalStateError } from "@sluice/core";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import { type ExecutionVertex, TimedExecutionVertex } from "./execution-vertex.js";
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
   * Asks `placement` for the TaskExecutor of each of `subtasks` (default: every subtask of the
   * job) and gives each its next attempt: 0 for the first, one more than its previous otherwise.
   * A placement that returns a lost TaskExecutor (`isLost`) throws an IllegalStateError; a
   * failed placement leaves the previous attempts in place.
   */
  async placeExecutions(
    placement: Placement,
    isLost: (gateway: TaskExecutorGateway) => boolean,
    subtasks?: readonly ExecutionVertex[],
  ): Promise<void> {
    const targets: { vertex: JobVertex; i: number; previous?: ExecutionVertex }[] =
      subtasks === undefined
        ? this.graph.vertices.flatMap((vertex) =>
            Array.from({ length: vertex.parallelism }, (_, i) => ({
              vertex,
              i,
              ...(this.vertices.has(vertex) ? { previous: this.subtasksOf(vertex)[i] } : {}),
            })),
          )
        : subtasks.map((previous) => ({
            vertex: previous.vertex,
            i: previous.subtaskIndex,
            previous,
          }));
    const placed: [ExecutionVertex | undefined, ExecutionVertex][] = [];
    for (const { vertex, i, previous } of targets) {
      const attemptNumber = previous === undefined ? 0 : previous.attemptId.attemptNumber + 1;
      const context: PlacementContext = {
        attemptNumber,
        ...(previous === undefined ? {} : { previous: previous.gateway }),
        isLost,
      };
      const gateway = await placement(vertex, i, context);
      if (isLost(gateway)) {
        throw new IllegalStateError(
          `the placement put ${vertex.name} (${i + 1}/${vertex.parallelism}) of job ${this.graph.name} on TaskExecutor ${gateway.location.resourceId}, which was lost; it must return a replacement`,
        );
      }
      placed.push([
        previous,
        new TimedExecutionVertex({
          vertex,
          subtaskIndex: i,
          attemptId: new ExecutionAttemptID(this.executionGraphId, vertex.id, i, attemptNumber),
          gateway,
          name: `${vertex.name} (${i + 1}/${vertex.parallelism})#${attemptNumber}`,
        }),
      ]);
    }
    // Swapped in only once every subtask is placed: a failed placement leaves the old attempts.
    for (const [previous, next] of placed) {
      if (previous === undefined) {
        const list = this.vertices.get(next.vertex) ?? [];
        list[next.subtaskIndex] = next;
        this.vertices.set(next.vertex, list);
        this.byAttempt.set(next.attemptId.toString(), next);
        continue;
      }
      // The same objects across attempts, so references callers hold see the new attempt.
      this.byAttempt.delete(previous.attemptId.toString());
      previous.attemptId = next.attemptId;
      previous.gateway = next.gateway;
      previous.name = next.name;
      previous.state = "CREATED";
      delete previous.result;
      delete previous.failureCause;
      delete previous.serializers;
      this.byAttempt.set(previous.attemptId.toString(), previous);
    }
  }

  /**
   * Asks `placement` again where `subtasks` run, keeping their attempts (they have not been
   * deployed): a TaskExecutor they were placed on was lost before their region was scheduled.
   */
  async relocate(
    placement: Placement,
    isLost: (gateway: TaskExecutorGateway) => boolean,
    subtasks: readonly ExecutionVertex[],
  ): Promise<void> {
    for (const execution of subtasks) {
      const { vertex, subtaskIndex, attemptId } = execution;
      const gateway = await placement(vertex, subtaskIndex, {
        attemptNumber: attemptId.attemptNumber,
        previous: execution.gateway,
        isLost,
      });
      if (isLost(gateway)) {
        throw new IllegalStateError(
          `the placement put ${vertex.name} (${subtaskIndex + 1}/${vertex.parallelism}) of job ${this.graph.name} on TaskExecutor ${gateway.location.resourceId}, which was lost; it must return a replacement`,
        );
      }
      execution.gateway = gateway;
    }
  }
}
