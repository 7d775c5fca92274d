/** The IPC messages between a test and a job manager process of the keyed counting job. */
import type { CounterState, KeyedCountingJobSpec } from "./keyed-counting-job.js";

/** What the test sends. */
export type ToJobManager =
  | { readonly kind: "run"; readonly spec: KeyedCountingJobSpec }
  | { readonly kind: "close" };

/** How a run ended, as JSON. */
export interface RunResult {
  readonly status: "FINISHED" | "FAILED" | "CANCELED" | "SUSPENDED";
  readonly error?: string;
  readonly restarts: number;
  readonly completedCheckpoints: number;
  /** The checkpoint the last restart restored, or null (none, or a restart from the start). */
  readonly restoredFrom: number | null;
  /** Bytes of in-flight data (unaligned channel state) the restored checkpoint held. */
  readonly restoredInFlightBytes: number;
  readonly counters: CounterState[];
}

/** What the job manager process sends. */
export type FromJobManager =
  | { readonly kind: "listening"; readonly port: number }
  /** The job's completed checkpoints rose to `completed`. */
  | { readonly kind: "checkpoints"; readonly completed: number }
  | { readonly kind: "result"; readonly result: RunResult }
  | { readonly kind: "error"; readonly message: string };
