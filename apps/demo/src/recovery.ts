import type { JobManager, RegisteredTaskManager } from "@sluice/cluster";
import type { JobExecution } from "@sluice/runtime";
import type { RecoverySettings } from "./checkpointing-options.js";
import { formatDuration } from "./format.js";
import type { LocalTaskManagers } from "./local-task-managers.js";
import { whenHalfPreCommitted } from "./pre-commit-watch.js";

/** How often a kill that waits for the first completed checkpoint (or a stage) looks again. */
const CHECKPOINT_POLL_MS = 20;

/** How often a batch kill looks whether the counting stage started: soon after it did. */
const STAGE_POLL_MS = 5;

/** When a batch job's kill comes: the job vertices of its two stages. */
export interface BatchStages {
  /** The job vertex of the first stage (the sources, which write BLOCKING partitions). */
  readonly sources: string;
  /** The job vertex of the second stage (the counters, which read them). */
  readonly counters: string;
}

/** Which task manager to kill, and when. */
export interface KillSpec {
  /** `--kill-task-manager-after`: this long into the job (batch: into the counting stage). */
  readonly afterMs: number | undefined;
  /** `--kill-task-manager-between-stages`: as the counting stage starts. */
  readonly betweenStages: boolean;
  /** Batch mode: the stages the kill's time counts from. */
  readonly batch?: BatchStages;
  /**
   * `--sink files`: the sink's folder and the count vertex. The kill then comes at the next
   * half-taken checkpoint after its time: one counter pre-committed, another not yet.
   */
  readonly sink?: { readonly directory: string; readonly counters: string };
}

/** The task manager `--kill-task-manager-after` killed, as the summary reports it. */
export interface KilledTaskManager {
  /** Its registration index (`task manager 1`). */
  readonly index: number;
  /** Its process id. */
  readonly pid: number;
  /** How long into the job it was killed. */
  readonly afterMs: number;
  /**
   * The job's newest completed checkpoint when the job manager noticed the loss: what the
   * restart restores (no checkpoint completes once a task manager is gone, since its tasks
   * cannot acknowledge, and a restart aborts the pending ones).
   */
  readonly latestCheckpoint?: number;
  /**
   * The tasks that had run on it by the kill, as `Name (i/n)` (finished ones too: in batch mode
   * their partitions were lost with it).
   */
  readonly tasks: readonly string[];
}

/** What the job manager role hands the recovery. */
export interface RecoveryContext {
  /** The cluster's job manager (its task managers, its port). */
  readonly jobManager: JobManager;
  /** The local children (one-command mode); `undefined` in the standalone job manager role. */
  readonly local: LocalTaskManagers | undefined;
  /** The running job. */
  readonly execution: JobExecution;
  /** Prints a line of the human-readable output. */
  readonly say: (text: string) => void;
}

/**
 * The demo's side of a job's recovery: `--kill-task-manager-after` SIGKILLs one local task
 * manager mid-job (with checkpoints, not before the first one completed, so that the restart
 * has one to restore), and when a task manager is lost while the job can restart (checkpoints, or
 * `restart-strategy.*`), a replacement is started (one-command mode) or awaited (standalone), for
 * the job manager's placement to put the lost subtasks on. The job side does the rest: it cancels
 * the remaining tasks and restarts every task from the newest completed checkpoint.
 */
export class Recovery {
  private context: RecoveryContext | undefined;
  private killTimer: NodeJS.Timeout | undefined;
  private countingStage: { cancel(): void } | undefined;
  private preCommits: { cancel(): void } | undefined;
  private killed: Omit<KilledTaskManager, "latestCheckpoint"> | undefined;
  private latestAtLoss: bigint | undefined;
  private startedAt = 0;

  /**
   * @param settings whether the job takes checkpoints (and in which mode) and restarts.
   * @param kill `--kill-task-manager-after` / `--kill-task-manager-between-stages`, if given.
   */
  constructor(
    readonly settings: RecoverySettings,
    private readonly kill: KillSpec = { afterMs: undefined, betweenStages: false },
  ) {}

  /** The job runs: schedules the kill, if asked for. */
  jobStarted(context: RecoveryContext): void {
    this.context = context;
    this.startedAt = performance.now();
    const { afterMs, betweenStages, batch } = this.kill;
    if (afterMs === undefined && !betweenStages) return;
    if (batch === undefined) {
      this.killTimer = setTimeout(() => this.killOne(), afterMs ?? 0);
      return;
    }
    this.countingStage = whenCountingStarts(context.execution, batch, () => {
      this.killTimer = setTimeout(() => this.killOne(), afterMs ?? 0);
    });
  }

  /**
   * A task manager was lost. Returns true when the job will restart without it (the loss is no
   * failure of the demo): a replacement is then on its way.
   */
  taskManagerLost(taskManager: RegisteredTaskManager): boolean {
    const context = this.context;
    if (context === undefined || !this.settings.restarts) return false;
    if (!context.execution.executionVertices.some((v) => v.gateway === taskManager)) return false;
    const latest = context.execution.checkpointCoordinator?.latestCompletedCheckpoint;
    this.latestAtLoss ??= latest?.checkpointId;
    const from =
      this.kill.batch !== undefined
        ? "the regions that lost tasks or partitions"
        : latest === undefined
          ? "from the start"
          : `from checkpoint ${latest.checkpointId}`;
    if (context.local !== undefined) {
      const replacement = context.local.startOne();
      context.say(
        `${taskManager.label} was lost: the job restarts ${from}; started task manager pid ${replacement.pid} to replace it\n`,
      );
    } else {
      context.say(
        `${taskManager.label} was lost: the job restarts ${from} once a task manager registers to replace it (pnpm demo -- taskmanager --jobmanager <this host>:${context.jobManager.port})\n`,
      );
    }
    return true;
  }

  /** Stops the kill timer (the job ended). */
  stop(): void {
    clearTimeout(this.killTimer);
    this.killTimer = undefined;
    this.countingStage?.cancel();
    this.preCommits?.cancel();
  }

  /** The task manager that was killed, if one was. */
  get killedTaskManager(): KilledTaskManager | undefined {
    if (this.killed === undefined) return undefined;
    return {
      ...this.killed,
      ...(this.latestAtLoss === undefined ? {} : { latestCheckpoint: Number(this.latestAtLoss) }),
    };
  }

  /**
   * SIGKILLs the connected local task manager registered last that runs tasks of the job; with
   * checkpoints, once the first one completed; with a file sink, the one of a counter that has
   * not pre-committed a checkpoint another counter pre-committed.
   */
  private killOne(): void {
    this.killTimer = undefined;
    const context = this.context;
    if (context?.local === undefined) return;
    const { execution, local } = context;
    if (execution.status !== "RUNNING") {
      context.say(`--kill-task-manager-after: the job is ${execution.status}; nothing killed\n`);
      return;
    }
    if (
      this.settings.mode !== undefined &&
      execution.checkpointCoordinator?.latestCompletedCheckpoint === undefined
    ) {
      // The point is a restore from a checkpoint: wait for the first one to complete.
      this.killTimer = setTimeout(() => this.killOne(), CHECKPOINT_POLL_MS);
      return;
    }
    const sink = this.kill.sink;
    if (sink !== undefined && this.preCommits === undefined) {
      const counters = execution.executionVertices.filter((v) => v.vertex.name === sink.counters);
      this.preCommits = whenHalfPreCommitted(
        sink.directory,
        counters.map((v) => v.subtaskIndex),
        (behind) => {
          if (execution.status !== "RUNNING") return;
          const gateway = counters.find((v) => v.subtaskIndex === behind)?.gateway;
          this.killTaskManager(
            context.jobManager.taskManagers.find((tm) => tm === gateway && tm.connected),
            `${sink.counters} (${behind + 1}/${counters.length}) has not pre-committed the checkpoint another counter pre-committed`,
          );
        },
      );
      return;
    }
    const running = new Set(execution.executionVertices.map((v) => v.gateway));
    this.killTaskManager(
      [...context.jobManager.taskManagers]
        .reverse()
        .find((tm) => tm.connected && running.has(tm) && local.byPid(tm.pid) !== undefined),
    );
  }

  /** SIGKILLs `victim`, a local task manager of the running job, and says why (`moment`). */
  private killTaskManager(victim: RegisteredTaskManager | undefined, moment?: string): void {
    const context = this.context;
    if (context?.local === undefined) return;
    const { execution, local } = context;
    const child = victim === undefined ? undefined : local.byPid(victim.pid);
    if (victim === undefined || child === undefined) return;
    const afterMs = performance.now() - this.startedAt;
    const tasks = execution.executionVertices
      .filter((v) => v.gateway === victim && v.state !== "CREATED")
      .map((v) => taskNameWithoutAttempt(v.name));
    this.killed = { index: victim.index, pid: victim.pid, afterMs, tasks };
    const latest = execution.checkpointCoordinator?.latestCompletedCheckpoint;
    const state = !this.settings.restarts
      ? "the job does not restart (no checkpoints, restart-strategy.type none): it fails"
      : this.kill.batch !== undefined
        ? `the counting stage started; it ran ${tasks.join(", ")}`
        : latest === undefined
          ? "no checkpoint completed yet"
          : `latest completed checkpoint ${latest.checkpointId}${moment === undefined ? "" : `; ${moment}`}`;
    context.say(
      `killing ${victim.label} with SIGKILL ${formatDuration(afterMs)} into the job (${state})\n`,
    );
    local.kill(child, "SIGKILL");
  }
}

/**
 * Calls `then` once every source finished and every counter is deployed (its state is past
 * SCHEDULED): the counting stage started, and the sources' partitions are what the counters
 * need. Polls, since the job side has no listener per subtask; `cancel` stops it.
 */
export function whenCountingStarts(
  execution: JobExecution,
  stages: BatchStages,
  then: () => void,
): { cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const started = () => {
    const vertices = execution.executionVertices;
    const sources = vertices.filter((v) => v.vertex.name === stages.sources);
    const counters = vertices.filter((v) => v.vertex.name === stages.counters);
    return (
      sources.every((v) => v.state === "FINISHED") &&
      counters.every((v) => v.state !== "CREATED" && v.state !== "SCHEDULED")
    );
  };
  const poll = () => {
    timer = undefined;
    if (execution.status !== "RUNNING") return;
    if (started()) then();
    else timer = setTimeout(poll, STAGE_POLL_MS);
  };
  poll();
  return { cancel: () => clearTimeout(timer) };
}

/** `Name (i/n)#attempt` without the attempt: how `JobResult.rerunTasks` names a task. */
export function taskNameWithoutAttempt(name: string): string {
  return name.replace(/#\d+$/, "");
}
