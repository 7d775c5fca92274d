/**
 * The job side's state assignment of a restored checkpoint: Flink's StateAssignmentOperationTest
 * cases that apply to Sluice's snapshots (named after them), and the checks that refuse a
 * checkpoint that does not fit the job.
 */
import { ErrorCodes, ExecutionAttemptID, ExecutionGraphID, JobID } from "@sluice/core";
import { describe, expect, it } from "vitest";
import { NO_CHECKPOINT_METRICS } from "../../messages/checkpoint-metrics.js";
import { JobGraph, type JobVertex } from "../job-graph.js";
import {
  type CheckpointedVertex,
  CompletedCheckpoint,
  type FinishedSubtask,
  type SubtaskCheckpointState,
} from "./completed-checkpoint.js";
import { StateAssignmentOperation } from "./state-assignment-operation.js";

/** A job of `Source` → `Count` at the given parallelisms. */
function job(source: number, count: number, countMaxParallelism = 128): JobGraph {
  const graph = new JobGraph("assigned");
  const sources = graph.addVertex({ name: "Source", parallelism: source, invokable: "source" });
  const counts = graph.addVertex({
    name: "Count",
    parallelism: count,
    invokable: "count",
    maxParallelism: countMaxParallelism,
  });
  graph.connect(sources, counts, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
  });
  return graph;
}

const vertex = (graph: JobGraph, name: string) =>
  graph.vertices.find((v) => v.name === name) as JobVertex;

/**
 * A checkpoint of `graph` (at its parallelisms) by job `jobId`: every subtask acknowledged with
 * a snapshot `<vertex>-<i>.json`, except those `finished` lists.
 */
function checkpointOf(
  graph: JobGraph,
  options: {
    readonly jobId?: JobID;
    readonly finished?: readonly { vertex: string; subtask: number }[];
    readonly persistedDataBytes?: number;
  } = {},
): CompletedCheckpoint {
  const finished: FinishedSubtask[] = (options.finished ?? []).map(({ vertex: name, subtask }) => ({
    vertexId: vertex(graph, name).id,
    subtaskIndex: subtask,
  }));
  const states: SubtaskCheckpointState[] = [];
  const vertices: CheckpointedVertex[] = [];
  const executionGraph = new ExecutionGraphID();
  for (const v of graph.vertices) {
    vertices.push({
      vertexId: v.id,
      vertexName: v.name,
      parallelism: v.parallelism,
      maxParallelism: v.maxParallelism,
    });
    for (let i = 0; i < v.parallelism; i++) {
      if (finished.some((f) => f.vertexId.equals(v.id) && f.subtaskIndex === i)) continue;
      states.push({
        vertexId: v.id,
        vertexName: v.name,
        subtaskIndex: i,
        executionAttemptId: new ExecutionAttemptID(executionGraph, v.id, i, 0),
        stateHandle: { path: `/checkpoints/${v.name}-${i}.json`, size: 10 },
        metrics: {
          ...NO_CHECKPOINT_METRICS,
          syncDurationMillis: 0,
          asyncDurationMillis: 0,
          persistedDataBytes: options.persistedDataBytes ?? 0,
        },
      });
    }
  }
  return new CompletedCheckpoint(7n, 0, 0, "/checkpoints/_metadata", states, {
    finishedSubtasks: finished,
    vertices,
    jobId: options.jobId ?? graph.jobId,
  });
}

/** The same graph's vertices, by name, for another run of the job (new ids). */
function restoredOnto(old: CompletedCheckpoint, graph: JobGraph): CompletedCheckpoint {
  const idOf = (name: string) => vertex(graph, name).id;
  const nameOf = (state: { vertexName: string }) => state.vertexName;
  return new CompletedCheckpoint(
    old.checkpointId,
    0,
    0,
    old.metadataPath,
    old.subtaskStates.map((state) => ({ ...state, vertexId: idOf(nameOf(state)) })),
    {
      finishedSubtasks: old.finishedSubtasks.map((task) => ({
        subtaskIndex: task.subtaskIndex,
        vertexId: idOf(
          old.subtaskStates.find((s) => s.vertexId.equals(task.vertexId))?.vertexName ??
            old.vertices.find((v) => v.vertexId.equals(task.vertexId))?.vertexName ??
            "",
        ),
      })),
      vertices: old.vertices.map((v) => ({ ...v, vertexId: idOf(v.vertexName) })),
      ...(old.jobId === undefined ? {} : { jobId: old.jobId }),
    },
  );
}

describe("StateAssignmentOperation", () => {
  it("gives subtask i of a vertex at its old parallelism old subtask i's snapshot", () => {
    const graph = job(2, 2);
    const assignment = new StateAssignmentOperation(checkpointOf(graph), graph);
    expect(assignment.restoreOf(vertex(graph, "Count"), 1)).toEqual({
      checkpointId: 7n,
      stateHandle: { path: "/checkpoints/Count-1.json", size: 10 },
    });
  });

  it("gives every subtask of a vertex at another parallelism every old subtask's snapshot, and names the job that took them", () => {
    const old = job(2, 2);
    const graph = job(2, 3);
    const assignment = new StateAssignmentOperation(restoredOnto(checkpointOf(old), graph), graph);
    for (let i = 0; i < 3; i++) {
      expect(assignment.restoreOf(vertex(graph, "Count"), i)).toEqual({
        checkpointId: 7n,
        jobId: old.jobId,
        rescaled: {
          parallelism: 2,
          subtasks: [
            { subtaskIndex: 0, stateHandle: { path: "/checkpoints/Count-0.json", size: 10 } },
            { subtaskIndex: 1, stateHandle: { path: "/checkpoints/Count-1.json", size: 10 } },
          ],
        },
      });
    }
    // The source keeps its parallelism: each subtask its own snapshot.
    expect(assignment.restoreOf(vertex(graph, "Source"), 0)?.stateHandle?.path).toBe(
      "/checkpoints/Source-0.json",
    );
  });

  it("testStateWithFullyFinishedOperators: a vertex all of whose subtasks had finished is restored finished at any parallelism, the others not", () => {
    const old = job(3, 2);
    const checkpoint = checkpointOf(old, {
      finished: [0, 1, 2].map((subtask) => ({ vertex: "Source", subtask })),
    });
    const graph = job(2, 2);
    const assignment = new StateAssignmentOperation(restoredOnto(checkpoint, graph), graph);
    for (let i = 0; i < 2; i++) {
      expect(assignment.restoreOf(vertex(graph, "Source"), i)?.finished).toBe(true);
      expect(assignment.restoreOf(vertex(graph, "Count"), i)?.finished).toBeUndefined();
    }
  });

  it("refuses a vertex some of whose subtasks had finished at another parallelism, naming it", () => {
    const old = job(2, 2);
    const checkpoint = checkpointOf(old, { finished: [{ vertex: "Source", subtask: 0 }] });
    const graph = job(3, 2);
    expect(() => new StateAssignmentOperation(restoredOnto(checkpoint, graph), graph)).toThrowError(
      expect.objectContaining({
        code: ErrorCodes.STATE_ASSIGNMENT,
        message: expect.stringMatching(
          /cannot restore Source at parallelism 3 .*: 1 of its 2 subtasks had finished and the others had not/,
        ),
      }),
    );
  });

  it("refuses a vertex whose max parallelism changed, naming both (Flink's checkParallelismPreconditions)", () => {
    const old = job(2, 2, 128);
    const graph = job(2, 2, 256);
    expect(
      () => new StateAssignmentOperation(restoredOnto(checkpointOf(old), graph), graph),
    ).toThrowError(
      expect.objectContaining({
        code: ErrorCodes.STATE_ASSIGNMENT,
        message: expect.stringContaining(
          "it was taken with max parallelism 128, and the job's Count has max parallelism 256",
        ),
      }),
    );
  });

  it("testChannelStateAssignmentNoRescale: a checkpoint with in-flight data is restored at the old parallelism, each subtask its own", () => {
    const graph = job(2, 2);
    const assignment = new StateAssignmentOperation(
      checkpointOf(graph, { persistedDataBytes: 100 }),
      graph,
    );
    expect(assignment.restoreOf(vertex(graph, "Count"), 0)?.stateHandle?.path).toBe(
      "/checkpoints/Count-0.json",
    );
  });

  it("refuses to rescale any vertex from a checkpoint with in-flight data (Flink rescales channel state; Sluice does not)", () => {
    const old = job(2, 2);
    const graph = job(2, 3);
    expect(
      () =>
        new StateAssignmentOperation(
          restoredOnto(checkpointOf(old, { persistedDataBytes: 100 }), graph),
          graph,
        ),
    ).toThrowError(
      expect.objectContaining({
        code: ErrorCodes.STATE_ASSIGNMENT,
        message: expect.stringContaining("holds in-flight data of an unaligned checkpoint"),
      }),
    );
  });

  it("assigningStateHandlesCanNotBeNull: a vertex the checkpoint has nothing of starts empty", () => {
    const graph = job(2, 2);
    const assignment = new StateAssignmentOperation(
      new CompletedCheckpoint(1n, 0, 0, "/x/_metadata", [], { jobId: new JobID() }),
      graph,
    );
    expect(assignment.restoreOf(vertex(graph, "Count"), 0)).toBeUndefined();
  });
});
