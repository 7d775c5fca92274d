import type { LocalCluster, RegisteredTaskManager } from "@sluice/cluster";
import type { JobExecution, JobStatus } from "@sluice/runtime";
import { whenHalfPreCommitted } from "./half-taken-checkpoint.js";
import { type BatchStages, whenStageStarts } from "./stage-start.js";

/** How often a kill that waits for the job's first completed checkpoint looks again. */
const CHECKPOINT_POLL_MS = 20;

/** Which task manager of a local cluster to kill, and when. */
export interface TaskManagerKillSpec {
  /** This long into the job (with `stages`: into the second stage). Default 0. */
  readonly afterMs?: number;
  /** A batch job: the kill's time counts from its second stage's start. */
  readonly stages?: BatchStages;
  /**
   * The job takes checkpoints: the kill waits for the first one to complete, so that the restart
   * has one to restore.
   */
  readonly checkpointed?: boolean;
  /**
   * The job writes through a transactional file sink: the kill comes at the next half-taken
   * checkpoint after its time (one writer pre-committed, another not yet), on the task manager of
   * the writer that has not (see {@link whenHalfPreCommitted}).
   */
  readonly sink?: {
    readonly directory: string;
    /** The writing vertex's name. */
    readonly writers: string;
    /** The subtask a committed part file's name belongs to. */
    readonly subtaskOf: (part: string) => number | undefined;
  };
}

/** A task manager the kill killed. */
export interface KilledTaskManager {
  /** Its registration index (`task manager 1`). */
  readonly index: number;
  readonly pid: number;
  /** Its label (`task manager 1 (pid 4242)`). */
  readonly label: string;
  /** How long into the job (or the second stage's wait) it was killed, in ms. */
  readonly afterMs: number;
  /**
   * The tasks that had run on it by the kill, as `Name (i/n)` (finished ones too: in a batch job
   * their partitions went with it).
   */
  readonly tasks: readonly string[];
  /** The job's newest completed checkpoint at the kill. */
  readonly latestCheckpoint: bigint | undefined;
  /**
   * With a file sink: the writer subtask (its index) that had not pre-committed the checkpoint
   * another writer had, whose task manager this was.
   */
  readonly notPreCommitted?: number;
}

/** What a {@link TaskManagerKill} tells. */
export interface TaskManagerKillEvents {
  /** It SIGKILLed a task manager. */
  readonly onKilled?: (killed: KilledTaskManager) => void;
  /** The time came when the job no longer ran: nothing was killed. */
  readonly onSkipped?: (status: JobStatus) => void;
}

/**
 * SIGKILLs one task manager process of a {@link LocalCluster} while a job runs, at a moment a
 * test or the demo chooses: a time into the job (with checkpoints, not before the first one
 * completed), a time into a batch job's second stage, or a half-taken checkpoint of a file sink.
 * The victim is the connected task manager, registered last, that runs a task of the job (or the
 * one of the file sink's writer that has not pre-committed). What happens next is the cluster's:
 * the job fails over, and a replacement takes the lost subtasks when one registers.
 */
export class TaskManagerKill {
  private timer: NodeJS.Timeout | undefined;
  private stage: { cancel(): void } | undefined;
  private preCommits: { cancel(): void } | undefined;
  private startedAt = 0;
  private execution: JobExecution | undefined;
  /** The task manager killed, once one was. */
  killed: KilledTaskManager | undefined;

  constructor(
    private readonly cluster: LocalCluster,
    private readonly spec: TaskManagerKillSpec,
    private readonly events: TaskManagerKillEvents = {},
  ) {}

  /** The job runs: schedules the kill. */
  start(execution: JobExecution): void {
    this.execution = execution;
    this.startedAt = performance.now();
    const afterMs = this.spec.afterMs ?? 0;
    if (this.spec.stages === undefined) {
      this.timer = setTimeout(() => this.killOne(), afterMs);
      return;
    }
    this.stage = whenStageStarts(execution, this.spec.stages, () => {
      this.timer = setTimeout(() => this.killOne(), afterMs);
    });
  }

  /** Stops a kill not done yet (the job ended). */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.stage?.cancel();
    this.preCommits?.cancel();
  }

  private killOne(): void {
    this.timer = undefined;
    const execution = this.execution as JobExecution;
    if (execution.status !== "RUNNING") {
      this.events.onSkipped?.(execution.status);
      return;
    }
    if (
      this.spec.checkpointed === true &&
      execution.checkpointCoordinator?.latestCompletedCheckpoint === undefined
    ) {
      this.timer = setTimeout(() => this.killOne(), CHECKPOINT_POLL_MS);
      return;
    }
    const sink = this.spec.sink;
    if (sink !== undefined) {
      if (this.preCommits !== undefined) return;
      const writers = execution.executionVertices.filter((v) => v.vertex.name === sink.writers);
      this.preCommits = whenHalfPreCommitted(
        sink.directory,
        writers.map((v) => v.subtaskIndex),
        sink.subtaskOf,
        (behind) => {
          if (execution.status !== "RUNNING") return;
          const gateway = writers.find((v) => v.subtaskIndex === behind)?.gateway;
          this.kill(
            this.cluster.jobManager.taskManagers.find((tm) => tm === gateway && tm.connected),
            behind,
          );
        },
      );
      return;
    }
    const running = new Set(execution.executionVertices.map((v) => v.gateway));
    const local = new Set(this.cluster.taskManagers.map((process) => process.pid));
    this.kill(
      [...this.cluster.jobManager.taskManagers]
        .reverse()
        .find((tm) => tm.connected && running.has(tm) && local.has(tm.pid)),
    );
  }

  private kill(victim: RegisteredTaskManager | undefined, notPreCommitted?: number): void {
    const execution = this.execution as JobExecution;
    const process = this.cluster.taskManagers.find((p) => p.pid === victim?.pid);
    if (victim === undefined || process === undefined) return;
    this.killed = {
      index: victim.index,
      pid: victim.pid,
      label: victim.label,
      afterMs: performance.now() - this.startedAt,
      tasks: execution.executionVertices
        .filter((v) => v.gateway === victim && v.state !== "CREATED")
        .map((v) => v.name.replace(/#\d+$/, "")),
      latestCheckpoint: execution.checkpointCoordinator?.latestCompletedCheckpoint?.checkpointId,
      ...(notPreCommitted === undefined ? {} : { notPreCommitted }),
    };
    this.events.onKilled?.(this.killed);
    process.kill("SIGKILL");
  }
}
