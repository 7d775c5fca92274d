import type { SharedNetworkMemoryHandle } from "@sluice/core";

/**
 * A request of one thread of a task manager for a view of a subpartition that another of its
 * threads produces (plain data: it crosses threads by `postMessage`).
 */
export interface SubpartitionRequest {
  /** The partition, as `ResultPartitionID.toString()`. */
  readonly partitionId: string;
  /** The subpartition of that partition the requesting channel reads. */
  readonly subpartitionIndex: number;
  /**
   * How long the producing side may wait for the producer to be deployed and its partition to
   * register (`taskmanager.network.partition-request-timeout` for the data server); 0 answers at
   * once, with a PartitionNotFoundError when it is not there (a local channel retries with its
   * backoff).
   */
  readonly timeoutMs: number;
  /** What the requesting environment tells the producing one (plain data). */
  readonly consumer: unknown;
}

/**
 * What a shuffle environment is given when the task manager runs its slots on worker threads
 * (`taskmanager.task-slots.mode: threaded`, Flink's one thread per slot): which thread it serves,
 * the network memory all of them share, and the runtime's routing between them. The runtime
 * creates one environment per thread, each with the same shared memory:
 *
 * - `network`: the task manager's main thread. It runs no task; its data server serves the
 *   partitions of every slot to other task managers, through views of the slots' threads.
 * - `slot`: the thread of one slot. Its tasks' partitions and gates live there; a channel whose
 *   producer runs on another slot of the task manager reads it through shared memory, one to
 *   another task manager connects from this thread.
 *
 * A plugin supports it by setting `ShuffleServiceFactory.supportsTaskSlotThreads`; the runtime
 * refuses the threaded mode with another plugin.
 */
export interface TaskSlotThreadsContext {
  /** The thread's part: the main thread's data server, or a slot's tasks. */
  readonly role: "network" | "slot";
  /** This thread's index: 0 for the main thread, 1 to n for the slots. */
  readonly threadIndex: number;
  /** The task manager's network memory, which every thread's buffer pool draws from. */
  readonly sharedMemory: SharedNetworkMemoryHandle;
  /** The threads' doorbells (`ThreadDoorbell.createSignals`), shared. */
  readonly signals: SharedArrayBuffer;
  /**
   * Sends `request` to the thread that runs the producer of its partition (waiting up to its
   * `timeoutMs` for that producer to be deployed); resolves with what that thread's environment
   * answered. Rejects with a PartitionNotFoundError when no thread produces it (yet), or with
   * the error the producing thread answered.
   */
  requestSubpartition(request: SubpartitionRequest): Promise<unknown>;
  /**
   * Installs this thread's answer to the requests of other threads for its partitions: what
   * `handler` resolves with (plain data, shared buffers stay shared) goes back to the requester.
   */
  serveSubpartitionRequests(handler: (request: SubpartitionRequest) => Promise<unknown>): void;
  /**
   * Calls `listener` when another thread of the task manager died (its tasks failed with
   * `cause`): what this thread shares with it (channels, lent buffers) must be given up.
   */
  onThreadLost(listener: (threadIndex: number, cause: Error) => void): void;
}
