import type {
  RescaledSubtaskState,
  TaskRestoreSpec,
} from "../../messages/task-deployment-descriptor.js";
import { StateAssignmentError } from "../../state/state-assignment-error.js";
import type { JobGraph, JobVertex } from "../job-graph.js";
import type { CompletedCheckpoint } from "./completed-checkpoint.js";

/**
 * Which state each subtask of a job restores from a completed checkpoint or savepoint (Flink's
 * `StateAssignmentOperation`, on the job side): decided once per restored checkpoint, before any
 * task is deployed, so a checkpoint that does not fit the job fails its restore at once.
 *
 * - A vertex at the parallelism the checkpoint was taken at: subtask `i` restores old subtask
 *   `i`'s snapshot (or is restored finished, FLIP-147).
 * - A vertex at another parallelism: every new subtask gets every old subtask's snapshot, and
 *   its TaskExecutor keeps its part (`redistributeTaskState`: keyed state by key group, operator
 *   list state by its mode). A vertex all of whose subtasks had finished stays finished at any
 *   parallelism.
 * - A vertex the checkpoint has nothing of starts empty.
 *
 * Refused, naming the vertex (Flink's `checkParallelismPreconditions` and its checks of
 * finished operators): a max parallelism that changed (keyed state is split into that many key
 * groups); a vertex at another parallelism some of whose subtasks had finished while others had
 * not; and any change of parallelism while the checkpoint holds in-flight data of an unaligned
 * checkpoint (channel state belongs to the channels of the old parallelism; Flink rescales it,
 * Sluice does not — a savepoint is always aligned and has none).
 */
export class StateAssignmentOperation {
  private readonly assignments = new Map<JobVertex, VertexAssignment>();

  /**
   * @throws StateAssignmentError naming the vertex when `checkpoint` cannot be assigned to
   *   `graph`'s subtasks.
   */
  constructor(
    readonly checkpoint: CompletedCheckpoint,
    readonly graph: JobGraph,
  ) {
    const rescaled: JobVertex[] = [];
    for (const vertex of graph.vertices) {
      const assignment = assignVertex(checkpoint, vertex);
      if (assignment === undefined) continue;
      this.assignments.set(vertex, assignment);
      if (assignment.kind === "rescaled") rescaled.push(vertex);
    }
    const [first] = rescaled;
    if (first === undefined) return;
    const inFlight = checkpoint.subtaskStates.find(
      (state) => (state.metrics?.persistedDataBytes ?? 0) > 0,
    );
    if (inFlight !== undefined) {
      throw new StateAssignmentError(
        `cannot restore job ${graph.name} from checkpoint ${checkpoint.checkpointId} (${checkpoint.metadataPath}) with ${first.name} at parallelism ${first.parallelism} (was ${oldParallelismOf(checkpoint, first)}): ${inFlight.vertexName} (${inFlight.subtaskIndex + 1}) holds in-flight data of an unaligned checkpoint, which belongs to the channels of the old parallelism; restore every vertex at its old parallelism, or from a savepoint (always aligned)`,
      );
    }
  }

  /**
   * What subtask `subtaskIndex` of `vertex` restores: the checkpoint's id, the job that took it
   * when not this one, and its snapshot, the old snapshots to redistribute, or that it is
   * finished; `undefined` when the checkpoint holds nothing of the vertex.
   */
  restoreOf(vertex: JobVertex, subtaskIndex: number): TaskRestoreSpec | undefined {
    const assignment = this.assignments.get(vertex);
    if (assignment === undefined) return undefined;
    const { checkpoint, graph } = this;
    const base = {
      checkpointId: checkpoint.checkpointId,
      ...(checkpoint.jobId === undefined || checkpoint.jobId.equals(graph.jobId)
        ? {}
        : { jobId: checkpoint.jobId }),
    };
    switch (assignment.kind) {
      case "finished":
        return { ...base, finished: true };
      case "rescaled":
        return {
          ...base,
          rescaled: { parallelism: assignment.oldParallelism, subtasks: assignment.subtasks },
        };
      case "same": {
        const state = checkpoint.stateOf(vertex.id, subtaskIndex);
        return {
          ...base,
          ...(state?.stateHandle === undefined ? {} : { stateHandle: state.stateHandle }),
          ...(checkpoint.isFinished(vertex.id, subtaskIndex) ? { finished: true } : {}),
        };
      }
    }
  }
}

type VertexAssignment =
  | { readonly kind: "same" }
  | { readonly kind: "finished" }
  | {
      readonly kind: "rescaled";
      readonly oldParallelism: number;
      readonly subtasks: readonly RescaledSubtaskState[];
    };

function assignVertex(
  checkpoint: CompletedCheckpoint,
  vertex: JobVertex,
): VertexAssignment | undefined {
  const states = checkpoint.subtaskStates.filter((state) => state.vertexId.equals(vertex.id));
  const finished = checkpoint.finishedSubtasks.filter((task) => task.vertexId.equals(vertex.id));
  const recorded = checkpoint.vertices.find((v) => v.vertexId.equals(vertex.id));
  if (states.length === 0 && finished.length === 0) return undefined;
  if (recorded !== undefined && recorded.maxParallelism !== vertex.maxParallelism) {
    throw new StateAssignmentError(
      `cannot restore ${vertex.name} from checkpoint ${checkpoint.checkpointId} (${checkpoint.metadataPath}): it was taken with max parallelism ${recorded.maxParallelism}, and the job's ${vertex.name} has max parallelism ${vertex.maxParallelism}; the max parallelism (the number of key groups keyed state is split into) cannot change across a restore: give ${vertex.name} max parallelism ${recorded.maxParallelism}`,
    );
  }
  const oldParallelism = oldParallelismOf(checkpoint, vertex);
  if (oldParallelism === vertex.parallelism) return { kind: "same" };
  if (finished.length === oldParallelism) return { kind: "finished" };
  if (finished.length > 0) {
    throw new StateAssignmentError(
      `cannot restore ${vertex.name} at parallelism ${vertex.parallelism} from checkpoint ${checkpoint.checkpointId} (${checkpoint.metadataPath}): ${finished.length} of its ${oldParallelism} subtasks had finished and the others had not; a vertex partly finished (FLIP-147) is restored at its old parallelism only`,
    );
  }
  const subtasks = states
    .map(({ subtaskIndex, stateHandle }) => ({
      subtaskIndex,
      ...(stateHandle === undefined ? {} : { stateHandle }),
    }))
    .sort((a, b) => a.subtaskIndex - b.subtaskIndex);
  return { kind: "rescaled", oldParallelism, subtasks };
}

/**
 * The vertex's parallelism when the checkpoint was taken: as its `_metadata` records it, else
 * (a checkpoint of an earlier release) one more than its highest subtask index, since every
 * subtask either acknowledged it or had finished.
 */
function oldParallelismOf(checkpoint: CompletedCheckpoint, vertex: JobVertex): number {
  const recorded = checkpoint.vertices.find((v) => v.vertexId.equals(vertex.id));
  if (recorded !== undefined) return recorded.parallelism;
  let highest = -1;
  for (const state of checkpoint.subtaskStates) {
    if (state.vertexId.equals(vertex.id)) highest = Math.max(highest, state.subtaskIndex);
  }
  for (const task of checkpoint.finishedSubtasks) {
    if (task.vertexId.equals(vertex.id)) highest = Math.max(highest, task.subtaskIndex);
  }
  return highest + 1;
}
