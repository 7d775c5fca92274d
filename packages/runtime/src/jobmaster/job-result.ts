import type { JobID } from "@sluice/core";
import type { JsonValue } from "@sluice/runtime-api";
import type { TaskManagerLocation } from "../messages/task-executor-gateway.js";
import type { CompletedCheckpoint } from "./checkpoints/completed-checkpoint.js";
import type { ExecutionVertex } from "./execution-vertex.js";
import type { JobVertex } from "./job-graph.js";

/** How a job ended. */
export interface JobResult {
  /** The job. */
  readonly jobId: JobID;
  /**
   * FINISHED, FAILED or CANCELED; or SUSPENDED when the job manager lost its leadership (or
   * closed under high availability) before the job ended: the job goes on under the next leader.
   */
  readonly status: "FINISHED" | "FAILED" | "CANCELED" | "SUSPENDED";
  /**
   * The root cause of a failed or canceled job: the first failure that is not a consequence of
   * another (a task that fails because its partition was released or its producer failed is
   * not the cause, as in Flink), with the code, message and stack the task reported. For a
   * suspended job, why it was suspended.
   */
  readonly error?: Error;
  /** The task whose failure failed the job, as `Name (i/n)#a`. */
  readonly failedTask?: string;
  /** Where {@link failedTask} ran: its TaskExecutor's resource id, host and data port. */
  readonly failedTaskLocation?: TaskManagerLocation;
  /** What each vertex's subtasks returned, by vertex name, in subtask order. */
  readonly results: ReadonlyMap<string, readonly (JsonValue | undefined)[]>;
  /**
   * Errors while releasing the job's partitions (at its end or at a restart) or deleting its
   * checkpoint files (the job's outcome stands).
   */
  readonly releaseErrors: readonly Error[];
  /** The job's checkpoints (all zero when it took none). */
  readonly checkpoints: JobCheckpointsSummary;
  /** How often the job failed over (restarted some regions or every task) after a failure. */
  readonly restarts: number;
  /**
   * The tasks a failover restarted (gave a new attempt), as `Name (i/n)` without the attempt, in
   * the graph's order, each once: after a region failover the subtasks of the regions that had
   * to re-run and had been scheduled (a region not scheduled yet just runs later), after a global
   * one every task.
   */
  readonly rerunTasks: readonly string[];
}

/** What a job's checkpoints came to (Flink's checkpoint statistics summary). */
export interface JobCheckpointsSummary {
  /** Checkpoints every task acknowledged. */
  readonly completed: number;
  /** Checkpoints triggered and aborted (declined, expired, subsumed, ended by a failover). */
  readonly aborted: number;
  /** The checkpoint the last restart restored; `undefined` without a restart from one. */
  readonly restoredFrom?: bigint;
  /**
   * Bytes of in-flight data (channel state of an unaligned checkpoint) the restored checkpoint
   * held and the restart replayed; present with `restoredFrom`.
   */
  readonly restoredPersistedDataBytes?: number;
  /** The newest completed checkpoint, with its per-task figures. */
  readonly latest?: CompletedCheckpoint;
}

/** What a job's result is made of when it ends (see {@link jobResultOf}). */
export interface JobOutcome {
  readonly jobId: JobID;
  readonly status: JobResult["status"];
  /** The root cause, and its task's name and location when it failed. */
  readonly rootCause: Error | undefined;
  readonly failedTaskName: string | undefined;
  readonly failedTaskLocation: TaskManagerLocation | undefined;
  /** Every vertex's subtasks, in subtask order. */
  readonly vertices: ReadonlyMap<JobVertex, readonly ExecutionVertex[]>;
  readonly releaseErrors: readonly Error[];
  readonly completedCheckpoints: number;
  readonly abortedCheckpoints: number;
  /** The checkpoint the last restart restored. */
  readonly restoredFrom: CompletedCheckpoint | undefined;
  readonly latestCheckpoint: CompletedCheckpoint | undefined;
  readonly restarts: number;
  /** The subtasks a failover restarted. */
  readonly rerun: readonly ExecutionVertex[];
}

/** The {@link JobResult} of an ended job (Flink's `JobResult.createFrom` its execution graph). */
export function jobResultOf(outcome: JobOutcome): JobResult {
  const results = new Map<string, (JsonValue | undefined)[]>();
  for (const [vertex, subtasks] of outcome.vertices) {
    results.set(
      vertex.name,
      subtasks.map((execution) => execution.result),
    );
  }
  const { restoredFrom, latestCheckpoint } = outcome;
  return {
    jobId: outcome.jobId,
    status: outcome.status,
    ...(outcome.rootCause === undefined ? {} : { error: outcome.rootCause }),
    ...(outcome.failedTaskName === undefined ? {} : { failedTask: outcome.failedTaskName }),
    ...(outcome.failedTaskLocation === undefined
      ? {}
      : { failedTaskLocation: outcome.failedTaskLocation }),
    results,
    releaseErrors: outcome.releaseErrors,
    checkpoints: {
      completed: outcome.completedCheckpoints,
      aborted: outcome.abortedCheckpoints,
      ...(restoredFrom === undefined
        ? {}
        : {
            restoredFrom: restoredFrom.checkpointId,
            restoredPersistedDataBytes: restoredFrom.persistedDataBytes,
          }),
      ...(latestCheckpoint === undefined ? {} : { latest: latestCheckpoint }),
    },
    restarts: outcome.restarts,
    rerunTasks: outcome.rerun.map(
      ({ vertex, subtaskIndex }) => `${vertex.name} (${subtaskIndex + 1}/${vertex.parallelism})`,
    ),
  };
}
