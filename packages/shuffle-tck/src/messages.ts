import type { SerializedThrowable } from "@sluice/runtime";
import type { TaskDeploymentDescriptorJSON, TaskExecutionStateJSON } from "@sluice/runtime/plugin";
import type { ExecutionState, PartitionInfoJSON } from "@sluice/runtime-api";

/**
 * The suite's control plane to a worker process (over the Node IPC channel): the suite sends
 * requests, the worker answers each, and the worker also sends its tasks' state changes and asks
 * the suite for producer states (Flink's TaskExecutorGateway and JobMasterGateway as messages).
 */
export type WorkerRequest =
  | { readonly cmd: "init"; readonly config: Record<string, unknown>; readonly configDir?: string }
  | { readonly cmd: "submit"; readonly descriptor: TaskDeploymentDescriptorJSON }
  | { readonly cmd: "cancel"; readonly attempt: string }
  | { readonly cmd: "update"; readonly attempt: string; readonly infos: PartitionInfoJSON[] }
  | { readonly cmd: "release"; readonly jobId: string; readonly partitions: string[] }
  | { readonly cmd: "producerStatus"; readonly attempt: string }
  | { readonly cmd: "consumerStatus"; readonly attempt: string }
  | { readonly cmd: "resume"; readonly attempt: string }
  | { readonly cmd: "status" }
  | { readonly cmd: "truncatePartitionFiles" }
  | { readonly cmd: "close" };

/** What `init` answers: where the worker's TaskExecutor runs. */
export interface InitResult {
  readonly resourceId: string;
  readonly host: string;
  readonly dataPort: number;
}

/** What `producerStatus` answers. */
export interface ProducerStatus {
  readonly emitted: number;
  readonly available: boolean;
  readonly released: boolean;
}

/** What `status` answers: what the worker holds. */
export interface WorkerStatus {
  /** Partitions occupying local resources (`getPartitionsOccupyingLocalResources`). */
  readonly partitions: number;
  /** Every file under the worker's `io.tmp.dirs`, where a plugin keeps its partition files. */
  readonly files: readonly string[];
  /** Tasks deployed on the worker that have not ended. */
  readonly tasks: number;
}

/** What `truncatePartitionFiles` answers: the files it cut to half their size. */
export interface TruncatedFiles {
  readonly files: readonly string[];
}

/** What `consumerStatus` answers. */
export interface ConsumerStatus {
  readonly counts: number[];
  readonly total: number;
  /** Events other than EndOfPartition received. */
  readonly events: number;
}

/** Suite → worker. */
export type ToWorker =
  | ({ readonly kind: "request"; readonly id: number } & WorkerRequest)
  | {
      readonly kind: "producer-state";
      readonly requestId: number;
      readonly state?: ExecutionState;
      readonly error?: SerializedThrowable;
    };

/** Worker → suite. */
export type FromWorker =
  | { readonly kind: "response"; readonly id: number; readonly ok: true; readonly result: unknown }
  | {
      readonly kind: "response";
      readonly id: number;
      readonly ok: false;
      readonly error: SerializedThrowable;
    }
  | { readonly kind: "state"; readonly update: TaskExecutionStateJSON }
  | {
      readonly kind: "producer-state-request";
      readonly requestId: number;
      readonly jobId: string;
      readonly resultId: string;
      readonly partitionId: string;
    };
