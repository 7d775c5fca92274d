import type { ExecutionAttemptID } from "@sluice/core";
import type { ExecutionState, JsonValue } from "@sluice/runtime-api";
import type { TaskSerializers } from "../messages/task-execution-state.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import type { JobVertex } from "./job-graph.js";

/**
 * One subtask of the job and where it stands (Flink's `ExecutionVertex` + its current
 * `Execution`). A restart gives it a new attempt, possibly on another TaskExecutor.
 */
export interface ExecutionVertex {
  readonly vertex: JobVertex;
  readonly subtaskIndex: number;
  /** The current attempt (its attempt number counts the job's restarts). */
  attemptId: ExecutionAttemptID;
  /** Where the current attempt runs. */
  gateway: TaskExecutorGateway;
  /** The task name Flink prints, `Name (i/n)#attempt`. */
  name: string;
  /** The last state the task reported (or the job side decided). */
  state: ExecutionState;
  /**
   * When the current attempt first reached each state it went through, in ms since the epoch
   * (Flink's `Execution.stateTimestamps`): `DEPLOYING` is when it was deployed, a final state when
   * it ended. Absent on a vertex the job side did not create.
   */
  readonly stateTimestamps?: Readonly<Partial<Record<ExecutionState, number>>>;
  /** What the task's invokable returned, once FINISHED. */
  result?: JsonValue;
  /** Why the task failed or was canceled, as it reported. */
  failureCause?: Error;
  /** The serializers the current attempt resolved, once it reported them. */
  serializers?: TaskSerializers;
  /**
   * The checkpoint (or savepoint) the next deployment of this subtask restores: the one the job
   * started from, or the latest completed one when a global or regional failover restarted it.
   */
  restoreFrom?: CompletedCheckpoint;
}

/** What a {@link TimedExecutionVertex} starts with: its first attempt, CREATED. */
export type ExecutionVertexInit = Omit<ExecutionVertex, "state" | "stateTimestamps">;

/**
 * An {@link ExecutionVertex} that times its state changes: each state is stamped the first time
 * the current attempt reaches it, and CREATED (a new attempt) starts the stamps over.
 */
export class TimedExecutionVertex implements ExecutionVertex {
  readonly vertex: ExecutionVertex["vertex"];
  readonly subtaskIndex: number;
  attemptId: ExecutionAttemptID;
  gateway: TaskExecutorGateway;
  name: string;
  result?: JsonValue;
  failureCause?: Error;
  serializers?: TaskSerializers;
  private current: ExecutionState = "CREATED";
  private stamps: Partial<Record<ExecutionState, number>>;

  constructor(
    init: ExecutionVertexInit,
    private readonly now: () => number = Date.now,
  ) {
    this.vertex = init.vertex;
    this.subtaskIndex = init.subtaskIndex;
    this.attemptId = init.attemptId;
    this.gateway = init.gateway;
    this.name = init.name;
    this.stamps = { CREATED: now() };
  }

  get state(): ExecutionState {
    return this.current;
  }

  set state(state: ExecutionState) {
    if (state === "CREATED") this.stamps = {};
    this.current = state;
    this.stamps[state] ??= this.now();
  }

  get stateTimestamps(): Readonly<Partial<Record<ExecutionState, number>>> {
    return this.stamps;
  }
}
