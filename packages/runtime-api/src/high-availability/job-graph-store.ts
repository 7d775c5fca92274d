import type { JsonValue } from "../descriptors/json-fields.js";

/**
 * The submitted job graphs that a new leader must recover (Flink's `JobGraphStore`). Writes are
 * fenced: only the current leader's succeed.
 */
export interface JobGraphStore {
  /**
   * Stores (or replaces) the job graph of `jobId`.
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   */
  putJobGraph(jobId: string, jobGraph: JsonValue): Promise<void>;
  /**
   * The stored job graph of `jobId`, or `undefined` when there is none.
   *
   * @throws HighAvailabilityStateError when its data is missing or damaged.
   */
  recoverJobGraph(jobId: string): Promise<JsonValue | undefined>;
  /**
   * Removes the job graph of `jobId` (the job reached a terminal state); nothing when absent.
   *
   * @throws FencingTokenError when this job manager is not the current leader.
   */
  removeJobGraph(jobId: string): Promise<void>;
  /** The ids of every stored job graph, sorted. */
  getJobIds(): Promise<readonly string[]>;
}
