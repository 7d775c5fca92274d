import type { JobExecution } from "@sluice/runtime";
import type { ShuffleMaster } from "@sluice/runtime-api";
import type { EmbeddedWorker, RegisteredShuffleWorker } from "@sluice/shuffle-remote";
import { formatDuration } from "./format.js";
import { type BatchStages, whenCountingStarts } from "./recovery.js";

/** What the remote shuffle's master offers the kill (duck-typed: any plugin's master). */
interface KillableWorkers {
  registeredWorkers(): RegisteredShuffleWorker[];
  embeddedWorkerProcesses(): readonly EmbeddedWorker[];
}

function hasWorkers(master: ShuffleMaster): master is ShuffleMaster & KillableWorkers {
  const candidate = master as Partial<KillableWorkers>;
  return (
    typeof candidate.registeredWorkers === "function" &&
    typeof candidate.embeddedWorkerProcesses === "function"
  );
}

/** The shuffle worker `--kill-shuffle-worker-after` killed, as the summary reports it. */
export interface KilledShuffleWorker {
  readonly pid: number;
  readonly afterMs: number;
  /** Partitions it stored (assigned and not released) when it was killed. */
  readonly partitions: number;
}

/**
 * `--kill-shuffle-worker-after <ms>`: `<ms>` into the counting stage, SIGKILLs the shuffle worker
 * (one the job manager's ShuffleMaster started) that stores the most partitions. The counters
 * reading from it fail with the partitions they lost, and the job side re-runs those partitions'
 * producers, whose new partitions go to the workers left.
 */
export class ShuffleWorkerKill {
  private timer: NodeJS.Timeout | undefined;
  private countingStage: { cancel(): void } | undefined;
  private startedAt = 0;
  killed: KilledShuffleWorker | undefined;

  constructor(
    private readonly afterMs: number,
    private readonly stages: BatchStages,
  ) {}

  /** The job runs: the kill comes `afterMs` into its counting stage. */
  jobStarted(execution: JobExecution, master: ShuffleMaster, say: (line: string) => void): void {
    this.startedAt = performance.now();
    this.countingStage = whenCountingStarts(execution, this.stages, () => {
      this.timer = setTimeout(() => this.killOne(execution, master, say), this.afterMs);
    });
  }

  /** The job ended: no kill any more. */
  stop(): void {
    clearTimeout(this.timer);
    this.countingStage?.cancel();
  }

  private killOne(execution: JobExecution, master: ShuffleMaster, say: (line: string) => void) {
    if (execution.status !== "RUNNING") {
      say(`--kill-shuffle-worker-after: the job is ${execution.status}; nothing killed\n`);
      return;
    }
    if (!hasWorkers(master)) return;
    const processes = master.embeddedWorkerProcesses();
    const victim = master
      .registeredWorkers()
      .filter((w) => w.live && processes.some((p) => p.child.pid === w.pid))
      .sort((a, b) => b.partitions - a.partitions)[0];
    const child = processes.find((p) => p.child.pid === victim?.pid)?.child;
    if (victim === undefined || child === undefined) {
      say(
        "--kill-shuffle-worker-after: no live shuffle worker started by the demo; nothing killed\n",
      );
      return;
    }
    const afterMs = performance.now() - this.startedAt;
    this.killed = { pid: victim.pid, afterMs, partitions: victim.partitions };
    say(
      `killing shuffle worker (pid ${victim.pid}) with SIGKILL ${formatDuration(afterMs)} into the job (the counting stage started; it stores ${victim.partitions} partition${victim.partitions === 1 ? "" : "s"}, whose producers re-run)\n`,
    );
    child.kill("SIGKILL");
  }
}
