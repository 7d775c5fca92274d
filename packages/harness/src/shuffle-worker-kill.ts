import type { JobExecution, JobStatus } from "@sluice/runtime";
import type { ShuffleMaster } from "@sluice/runtime-api";
import type { RemoteShuffleMaster } from "@sluice/shuffle-remote";
import { type BatchStages, whenStageStarts } from "./stage-start.js";

/** What the kill reads of the remote shuffle's master. */
type WorkerRegistry = Pick<RemoteShuffleMaster, "registeredWorkers" | "embeddedWorkerProcesses">;

/** The master of `@sluice/shuffle-remote` (its workers and their processes), or undefined. */
export function remoteShuffleMasterOf(master: ShuffleMaster): WorkerRegistry | undefined {
  const candidate = master as Partial<WorkerRegistry>;
  return typeof candidate.registeredWorkers === "function" &&
    typeof candidate.embeddedWorkerProcesses === "function"
    ? (master as ShuffleMaster & WorkerRegistry)
    : undefined;
}

/** The shuffle worker a {@link ShuffleWorkerKill} killed. */
export interface KilledShuffleWorker {
  readonly pid: number;
  /** How long into the job it was killed, in ms. */
  readonly afterMs: number;
  /** Partitions it stored (assigned and not released) when it was killed. */
  readonly partitions: number;
}

/** What a {@link ShuffleWorkerKill} tells. */
export interface ShuffleWorkerKillEvents {
  readonly onKilled?: (killed: KilledShuffleWorker) => void;
  /** Nothing was killed: the job no longer ran, or no worker of the master's own was live. */
  readonly onSkipped?: (why: { readonly status: JobStatus; readonly noWorker: boolean }) => void;
}

/**
 * SIGKILLs the shuffle worker of `@sluice/shuffle-remote` that stores the most partitions, `afterMs`
 * into a batch job's second stage: one of the workers the job manager's ShuffleMaster started
 * (`remote-shuffle.manager.embedded-workers`). The consumers reading from it fail with the
 * partitions they lost, and the job side re-runs those partitions' producers.
 */
export class ShuffleWorkerKill {
  private timer: NodeJS.Timeout | undefined;
  private stage: { cancel(): void } | undefined;
  private startedAt = 0;
  /** The worker killed, once one was. */
  killed: KilledShuffleWorker | undefined;

  constructor(
    private readonly master: ShuffleMaster,
    private readonly afterMs: number,
    private readonly stages: BatchStages,
    private readonly events: ShuffleWorkerKillEvents = {},
  ) {}

  /** The job runs: the kill comes `afterMs` into its second stage. */
  start(execution: JobExecution): void {
    this.startedAt = performance.now();
    this.stage = whenStageStarts(execution, this.stages, () => {
      this.timer = setTimeout(() => this.killOne(execution), this.afterMs);
    });
  }

  /** Stops a kill not done yet. */
  stop(): void {
    clearTimeout(this.timer);
    this.stage?.cancel();
  }

  private killOne(execution: JobExecution): void {
    if (execution.status !== "RUNNING") {
      this.events.onSkipped?.({ status: execution.status, noWorker: false });
      return;
    }
    const registry = remoteShuffleMasterOf(this.master);
    const processes = registry?.embeddedWorkerProcesses() ?? [];
    const victim = (registry?.registeredWorkers() ?? [])
      .filter((w) => w.live && processes.some((p) => p.child.pid === w.pid))
      .sort((a, b) => b.partitions - a.partitions)[0];
    const child = processes.find((p) => p.child.pid === victim?.pid)?.child;
    if (victim === undefined || child === undefined) {
      this.events.onSkipped?.({ status: execution.status, noWorker: true });
      return;
    }
    this.killed = {
      pid: victim.pid,
      afterMs: performance.now() - this.startedAt,
      partitions: victim.partitions,
    };
    this.events.onKilled?.(this.killed);
    child.kill("SIGKILL");
  }
}
