/**
 * The JSON messages between the coordinator and its task managers over the `child_process` IPC
 * channel (Flink's RPCs between JobMaster and TaskExecutor, reduced to the demo's needs). Ids
 * and descriptors travel as strings and as the runtime-api codecs' JSON, never as objects.
 */
import type {
  ExecutionState,
  InputGateDeploymentDescriptorJSON,
  ResultPartitionDeploymentDescriptorJSON,
} from "@sluice/runtime-api";
import type { CorpusSpec } from "./corpus.js";
import type { TaskKind } from "./job-graph.js";

/** An error as it crosses the process boundary. */
export interface ErrorInfo {
  readonly name: string;
  /** The SluiceError code, when there is one. */
  readonly code: string | undefined;
  readonly message: string;
  readonly stack: string | undefined;
}

export function errorInfoOf(error: unknown): ErrorInfo {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    const cause =
      error.cause instanceof Error
        ? ` (caused by ${error.cause.name}: ${error.cause.message})`
        : "";
    return {
      name: error.name,
      code: typeof code === "string" ? code : undefined,
      message: error.message + cause,
      stack: error.stack,
    };
  }
  return { name: "Error", code: undefined, message: String(error), stack: undefined };
}

export function describeError(error: ErrorInfo): string {
  return `${error.code === undefined ? error.name : `${error.name} [${error.code}]`}: ${error.message}`;
}

// ------------------------------------------------------------------ coordinator → task manager

/** First message: the raw configuration (as the coordinator loaded it) and where it came from. */
export interface InitMessage {
  readonly type: "init";
  readonly index: number;
  readonly config: Record<string, unknown>;
  readonly configDir: string | undefined;
  readonly configFile: string | undefined;
}

export interface SourceTaskDeployment {
  readonly kind: "source";
  readonly name: string;
  readonly subtaskIndex: number;
  readonly attemptId: string;
  readonly partition: ResultPartitionDeploymentDescriptorJSON;
  readonly corpus: CorpusSpec;
}

export interface CountTaskDeployment {
  readonly kind: "count";
  readonly name: string;
  readonly subtaskIndex: number;
  readonly attemptId: string;
  readonly gate: InputGateDeploymentDescriptorJSON;
}

export type TaskDeployment = SourceTaskDeployment | CountTaskDeployment;

/** Creates and sets up the writers and gates of these tasks; answered by `deployed`. */
export interface DeployMessage {
  readonly type: "deploy";
  readonly jobId: string;
  readonly tasks: readonly TaskDeployment[];
}

/** Every task manager is deployed: request partitions and run. */
export interface StartMessage {
  readonly type: "start";
}

/** The job finished (or failed): release everything and exit. */
export interface ShutdownMessage {
  readonly type: "shutdown";
  /** True when the job failed: tasks still running are cancelled. */
  readonly cancel: boolean;
}

export interface ProducerStateResponse {
  readonly type: "producer-state";
  readonly requestId: number;
  readonly state: ExecutionState | undefined;
}

export type CoordinatorMessage =
  | InitMessage
  | DeployMessage
  | StartMessage
  | ShutdownMessage
  | ProducerStateResponse;

// ------------------------------------------------------------------ task manager → coordinator

export interface ReadyMessage {
  readonly type: "ready";
  readonly index: number;
  readonly pid: number;
  readonly resourceId: string;
  readonly host: string;
  readonly dataPort: number;
}

export interface DeployedMessage {
  readonly type: "deployed";
  readonly index: number;
}

/** A task's live counters. */
export interface TaskProgress {
  readonly name: string;
  readonly kind: TaskKind;
  readonly subtaskIndex: number;
  /** Records emitted (sources) or received (counters). */
  readonly records: number;
  /** Bytes out of the partition (sources) or into the gate (counters). */
  readonly bytes: number;
  /** outPoolUsage (sources) or inPoolUsage (counters), in [0, 1]. */
  readonly poolUsage: number;
  /** Time the source waited for its back-pressured partition. */
  readonly backPressuredTimeMs: number;
  readonly finished: boolean;
}

export interface ProgressMessage {
  readonly type: "progress";
  readonly index: number;
  readonly tasks: readonly TaskProgress[];
  readonly rssMb: number;
}

/** A source emitted everything and finished its partition. */
export interface SourceFinishedMessage {
  readonly type: "source-finished";
  readonly index: number;
  readonly task: TaskProgress;
}

/** A counter read its whole input: its counts, as [word, count] pairs. */
export interface CountsMessage {
  readonly type: "counts";
  readonly index: number;
  readonly task: TaskProgress;
  readonly counts: readonly (readonly [string, number])[];
}

export interface TaskFailedMessage {
  readonly type: "task-failed";
  readonly index: number;
  readonly task: string;
  readonly error: ErrorInfo;
}

/** The task manager itself failed (plugin, environment, unexpected error); it exits next. */
export interface FatalMessage {
  readonly type: "fatal";
  readonly index: number;
  readonly phase: string;
  readonly error: ErrorInfo;
}

export interface ProducerStateRequest {
  readonly type: "producer-state-request";
  readonly index: number;
  readonly requestId: number;
  readonly partitionId: string;
}

/** Sent after the environment was closed, right before a clean exit. */
export interface ClosedMessage {
  readonly type: "closed";
  readonly index: number;
  readonly pid: number;
  readonly peakRssMb: number;
  /** Segments of the NetworkBufferPool free before it was destroyed, if the plugin has one. */
  readonly bufferPool: { readonly available: number; readonly total: number } | undefined;
  /** Partitions still holding resources at shutdown (should be none). */
  readonly unreleasedPartitions: number;
}

export type TaskManagerMessage =
  | ReadyMessage
  | DeployedMessage
  | ProgressMessage
  | SourceFinishedMessage
  | CountsMessage
  | TaskFailedMessage
  | FatalMessage
  | ProducerStateRequest
  | ClosedMessage;
