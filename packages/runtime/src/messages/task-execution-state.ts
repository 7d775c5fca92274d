import { ExecutionAttemptID, JobID } from "@sluice/core";
import type { ExecutionState, JsonValue } from "@sluice/runtime-api";
import { deserializeThrowable, type SerializedThrowable } from "./serialized-throwable.js";

/**
 * A task's state change as the TaskExecutor reports it to the job side (Flink's
 * `TaskExecutionState`): the attempt, its new state, and the cause of a failure or the result of
 * a finished task.
 */
export interface TaskExecutionState {
  /** The job of the task. */
  readonly jobId: JobID;
  /** The execution attempt. */
  readonly executionAttemptId: ExecutionAttemptID;
  /** The new state. */
  readonly state: ExecutionState;
  /** Why the task failed (`FAILED`) or was canceled (`CANCELED`). */
  readonly error?: SerializedThrowable;
  /** What the task's invokable returned (`FINISHED`; Flink's accumulators). */
  readonly result?: JsonValue;
  /** The serializers the task resolved (its `INITIALIZING` report). */
  readonly serializers?: TaskSerializers;
}

/**
 * The `TypeSerializer.name` of every serializer a task resolved from its descriptor's names: one
 * per produced partition and one per input gate, in the descriptor's order. Each process resolves
 * a name against its own registered code, so two processes may resolve one name to different
 * serializers; from these the job side tells a producer and a consumer that disagree.
 */
export interface TaskSerializers {
  /** What each produced partition is written with. */
  readonly produced: readonly string[];
  /** What each input gate is read with. */
  readonly consumed: readonly string[];
}

/** The JSON form of {@link TaskExecutionState}, for a control plane between processes. */
export interface TaskExecutionStateJSON {
  readonly jobId: string;
  readonly executionAttemptId: string;
  readonly state: ExecutionState;
  readonly error?: SerializedThrowable;
  readonly result?: JsonValue;
  readonly serializers?: TaskSerializers;
}

/** {@link TaskExecutionState} as JSON. */
export function taskExecutionStateToJSON(update: TaskExecutionState): TaskExecutionStateJSON {
  return {
    jobId: update.jobId.toString(),
    executionAttemptId: update.executionAttemptId.toString(),
    state: update.state,
    ...(update.error === undefined ? {} : { error: update.error }),
    ...(update.result === undefined ? {} : { result: update.result }),
    ...(update.serializers === undefined ? {} : { serializers: update.serializers }),
  };
}

/** Parses the JSON form; ids that do not parse throw IllegalArgumentError. */
export function taskExecutionStateFromJSON(json: TaskExecutionStateJSON): TaskExecutionState {
  return {
    jobId: JobID.fromHex(json.jobId),
    executionAttemptId: ExecutionAttemptID.parse(json.executionAttemptId),
    state: json.state,
    ...(json.error === undefined ? {} : { error: json.error }),
    ...(json.result === undefined ? {} : { result: json.result }),
    ...(json.serializers === undefined ? {} : { serializers: json.serializers }),
  };
}

/** The error of a FAILED or CANCELED update, rebuilt; undefined for other states. */
export function failureOf(update: TaskExecutionState): Error | undefined {
  return update.error === undefined ? undefined : deserializeThrowable(update.error);
}

const TERMINAL: ReadonlySet<ExecutionState> = new Set(["FINISHED", "FAILED", "CANCELED"]);

/** Whether a task in `state` has ended for good (Flink's `ExecutionState.isTerminal`). */
export function isTerminal(state: ExecutionState): boolean {
  return TERMINAL.has(state);
}
