import type { ReadableConfig } from "../config/config-option.js";
import type { CheckpointIDCounter } from "./checkpoint-id-counter.js";
import type { CompletedCheckpointStore } from "./completed-checkpoint-store.js";
import type { JobGraphStore } from "./job-graph-store.js";
import type { JobResultStore } from "./job-result-store.js";
import type { LeaderElection } from "./leader-election.js";
import type { LeaderRetrievalService } from "./leader-retrieval-service.js";

/**
 * Everything a cluster needs to survive the loss of its job manager (Flink's
 * `HighAvailabilityServices`): the job managers' leader election, leader retrieval for task
 * managers and clients, and the stores a new leader recovers the running jobs from. The
 * coordination service holds pointers; the data lives under `high-availability.storageDir`.
 * Every store's writes are fenced by the leadership of this process's
 * {@link getJobManagerLeaderElection | leader election}.
 */
export interface HighAvailabilityServices {
  /** This process's part in the job managers' election (one per services instance). */
  getJobManagerLeaderElection(): LeaderElection;
  /** A new retrieval of the job managers' leader (each call a new one, started by the caller). */
  getJobManagerLeaderRetriever(): LeaderRetrievalService;
  /** The submitted job graphs. */
  getJobGraphStore(): JobGraphStore;
  /** The results of the jobs that ended for good: what a new leader must not run again. */
  getJobResultStore(): JobResultStore;
  /**
   * The completed checkpoints of `jobId`, keeping `maxNumberOfRetainedCheckpoints` of them.
   *
   * @throws IllegalArgumentError when `maxNumberOfRetainedCheckpoints` is below 1.
   */
  createCompletedCheckpointStore(
    jobId: string,
    maxNumberOfRetainedCheckpoints: number,
  ): CompletedCheckpointStore;
  /** The checkpoint id counter of `jobId`. */
  createCheckpointIDCounter(jobId: string): CheckpointIDCounter;
  /** Leaves the election (a leader gives up leadership) and closes the client; keeps all data. */
  close(): Promise<void>;
  /**
   * Closes, after removing every key and file of this cluster (`high-availability.cluster-id`):
   * the cluster is done and nothing is left to recover.
   */
  closeAndCleanupAllData(): Promise<void>;
}

/** What the process gives {@link HighAvailabilityServicesFactory.createHAServices}. */
export interface HighAvailabilityServicesContext {
  /**
   * Where this process's job manager serves, for services that cannot elect (`none`: the one
   * job manager's configured address); undefined in a task manager.
   */
  readonly jobManagerAddress?: string;
  /**
   * Where the services report what does not stop them: a lost leadership, a campaign retried
   * because the coordination service could not be reached (default: `process.emitWarning`).
   */
  readonly onWarning?: (message: string) => void;
}

/**
 * The entry point of a high-availability plugin (Flink's `HighAvailabilityServicesFactory`): what
 * `high-availability.type` names as `<module>#<export>` (`etcd` is `@sluice/ha-etcd`'s). Loaded
 * like a shuffle plugin: a class with a no-argument constructor, or an object.
 */
export interface HighAvailabilityServicesFactory {
  /**
   * Creates the services from the configuration (`high-availability.*`), connected and ready.
   *
   * @throws ConfigurationError for a missing or bad key; HighAvailabilityUnavailableError when
   *   the coordination service cannot be reached.
   */
  createHAServices(
    configuration: ReadableConfig,
    context: HighAvailabilityServicesContext,
  ): Promise<HighAvailabilityServices>;
}

/** True when `value` has a `createHAServices` method: a {@link HighAvailabilityServicesFactory}. */
export function isHighAvailabilityServicesFactory(
  value: unknown,
): value is HighAvailabilityServicesFactory {
  return (
    (typeof value === "object" || typeof value === "function") &&
    value !== null &&
    typeof (value as { createHAServices?: unknown }).createHAServices === "function"
  );
}
