/**
 * The messages between a task manager's main thread and its slot threads
 * (`taskmanager.task-slots.mode: threaded`): the TaskExecutorGateway calls the main thread hands
 * to a slot, the JobMasterGateway calls a slot's tasks make, and the routing of subpartition
 * requests between threads. Plain data only (`postMessage` clones it; shared buffers stay
 * shared): descriptors, states and checkpoint messages travel as their versioned JSON codecs, as
 * on the control plane, errors as `SerializedThrowable`s.
 */
import type { SharedNetworkMemoryHandle } from "@sluice/core";
import type { JsonValue, SubpartitionRequest } from "@sluice/runtime-api";
import type { PluginLoaderOptions } from "../loader/plugin-loader.js";
import type { ShuffleServiceLoaderOptions } from "../loader/shuffle-service-loader.js";
import type { AcknowledgeCheckpointJSON } from "../messages/acknowledge-checkpoint.js";
import type { CheckpointTriggerOptionsJSON } from "../messages/checkpoint-trigger-options.js";
import type { DeclineCheckpointJSON } from "../messages/decline-checkpoint.js";
import type { SerializedThrowable } from "../messages/serialized-throwable.js";
import type { TaskExecutionStateJSON } from "../messages/task-execution-state.js";

/** What a slot thread is started with (its `workerData`). */
export interface TaskSlotThreadInit {
  /** The slot, from 0. */
  readonly slotIndex: number;
  /** The thread's index in the shared memory and the doorbells: the slot's index + 1. */
  readonly threadIndex: number;
  /** The task manager's configuration entries (`Configuration.toObject()`). */
  readonly configuration: Readonly<Record<string, unknown>>;
  readonly configDir?: string;
  readonly configFile?: string;
  /** The task manager's resource id: a slot's tasks belong to it. */
  readonly resourceId: string;
  /** The task manager's data port (its main thread's data server). */
  readonly dataPort: number;
  readonly networkMemoryBytes: number;
  readonly localCommunicationOnly: boolean;
  readonly sharedMemory: SharedNetworkMemoryHandle;
  readonly signals: SharedArrayBuffer;
  readonly loader?: ShuffleServiceLoaderOptions;
  readonly userCodeLoader?: PluginLoaderOptions;
  /** The module whose user code a task runs when its descriptor names no job module. */
  readonly userCodeModule?: string;
  /** The thread's young generation, in MiB (`taskmanager.task-slots.young-generation-size`). */
  readonly youngGenerationSizeMb: number;
}

/** The TaskExecutorGateway calls (and the few others) the main thread makes on a slot. */
export type SlotCall =
  | {
      readonly method: "submitTask";
      readonly descriptor: unknown;
      /** The job master takes checkpoint acknowledgements and declines (a checkpointing job). */
      readonly acknowledges: boolean;
    }
  | { readonly method: "cancelTask"; readonly attempt: string }
  | { readonly method: "updatePartitions"; readonly attempt: string; readonly infos: unknown[] }
  | {
      readonly method: "triggerCheckpoint" | "notifyCheckpointComplete" | "notifyCheckpointAborted";
      readonly attempt: string;
      readonly checkpointId: string;
      /** The trigger's and the completion's timestamp, or the abort's last completed checkpoint. */
      readonly other: string;
      /** The completion's last subsumed checkpoint, when the job side named one. */
      readonly lastSubsumed?: string;
      /** A savepoint trigger's type and folder (absent for a periodic checkpoint). */
      readonly snapshotType?: NonNullable<CheckpointTriggerOptionsJSON["snapshotType"]>;
      readonly targetLocation?: string;
    }
  | {
      readonly method: "releasePartitions" | "releasePartitionsLocally";
      readonly ids: string[];
    }
  | { readonly method: "releaseJobPartitions"; readonly jobId: string }
  | {
      readonly method: "deliverJobMessage";
      readonly jobId: string;
      readonly name: string;
      readonly payload: JsonValue;
    }
  | { readonly method: "dumpMetrics" }
  | { readonly method: "close" };

/** From the main thread to a slot thread. */
export type ToSlotThread =
  | { readonly kind: "call"; readonly id: number; readonly call: SlotCall }
  /** The answer to one of the slot's requests. */
  | ({ readonly kind: "answer"; readonly id: number } & Outcome)
  /** Another thread asks this slot for a view of one of its partitions. */
  | { readonly kind: "serve"; readonly id: number; readonly request: SubpartitionRequest }
  /** Another thread of the task manager died. */
  | {
      readonly kind: "thread-lost";
      readonly threadIndex: number;
      readonly cause: SerializedThrowable;
    };

/** A request a slot thread makes of the main thread. */
export type SlotRequest =
  | {
      readonly what: "producer-state";
      /** The asking task's attempt: the main thread asks that task's job master. */
      readonly attempt: string;
      readonly jobId: string;
      readonly resultId: string;
      readonly partitionId: string;
    }
  | { readonly what: "subpartition"; readonly request: SubpartitionRequest };

/** From a slot thread to the main thread. */
export type FromSlotThread =
  | { readonly kind: "ready" }
  | { readonly kind: "start-failed"; readonly error: SerializedThrowable }
  /** The result of a {@link SlotCall}. */
  | ({ readonly kind: "result"; readonly id: number } & Outcome)
  | { readonly kind: "request"; readonly id: number; readonly request: SlotRequest }
  /** The answer to a `serve`. */
  | ({ readonly kind: "served"; readonly id: number } & Outcome)
  /** JobMasterGateway calls of the slot's tasks. */
  | { readonly kind: "state"; readonly update: TaskExecutionStateJSON }
  | { readonly kind: "acknowledge"; readonly ack: AcknowledgeCheckpointJSON }
  | { readonly kind: "decline"; readonly decline: DeclineCheckpointJSON }
  /** The partitions the slot holds now, whenever that changed. */
  | { readonly kind: "partitions"; readonly ids: readonly string[] }
  /**
   * The slot's TaskExecutor cannot go on safely (a task ignored its cancellation past
   * `task.cancellation.timeout`): the task manager's fatal-error handler decides.
   */
  | { readonly kind: "fatal-error"; readonly error: SerializedThrowable };

/** How a call or request ended. */
export type Outcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: SerializedThrowable };
