import type { RegisteredTaskManager } from "@sluice/cluster";
import { ConfigurationError } from "@sluice/core";
import type { ShuffleMaster } from "@sluice/runtime-api";
import {
  BATCH_SHUFFLE_MESSAGE,
  type BatchShuffleReport,
  BatchShuffleReportSchema,
  type BatchSummary,
} from "./batch-mode.js";
import type { JobFailures } from "./job-failures.js";
import { shuffleWorkerReports } from "./remote-shuffle-workers.js";
import type { StageSpan } from "./stage-timeline.js";

/** Where {@link collectBatchSummary} gathers a batch job's summary from. */
export interface BatchSummarySources {
  /** `taskmanager.network.compression.codec` of the blocking partitions. */
  readonly codec: string;
  /** When each stage ran. */
  readonly stages: readonly StageSpan[];
  /** Every task manager that registered. */
  readonly taskManagers: readonly RegisteredTaskManager[];
  /** Those lost while the job ran: they cannot report. */
  readonly lost: ReadonlySet<RegisteredTaskManager>;
  /** The job's failures: a task manager that does not report in time is one. */
  readonly failures: JobFailures;
  /** How long one task manager's report may take. */
  readonly timeoutMs: number;
  /** The shuffle master, whose shuffle workers report when the partitions live on them. */
  readonly master: ShuffleMaster | undefined;
}

/**
 * The job manager's side of {@link BATCH_SHUFFLE_MESSAGE}, once a batch job finished: what every
 * task manager's blocking partitions wrote and deleted (each waits until its released
 * partitions' files are gone), and the shuffle workers' when they hold the partitions; a lost
 * task manager is left out.
 *
 * @throws ConfigurationError when a task manager's shuffle plugin has no batch-shuffle metrics.
 */
export async function collectBatchSummary(sources: BatchSummarySources): Promise<BatchSummary> {
  const reports: BatchShuffleReport[] = [];
  for (const tm of sources.taskManagers) {
    // A task manager lost during the job (killed) cannot report; its files went with it.
    if (sources.lost.has(tm)) continue;
    const reply = await sources.failures.phase(tm.call(BATCH_SHUFFLE_MESSAGE, null), {
      ms: sources.timeoutMs,
      what: `${tm.label}'s batch shuffle report`,
    });
    if (reply === null) {
      throw new ConfigurationError(
        `the shuffle plugin of ${tm.label} registers no Status.Shuffle.Netty.BatchShuffle metrics; batch mode reports them`,
      );
    }
    reports.push(BatchShuffleReportSchema.parse(reply));
  }
  const { master } = sources;
  const shuffleWorkers = master === undefined ? undefined : await shuffleWorkerReports(master);
  return {
    codec: shuffleWorkers === undefined ? sources.codec : "NONE",
    taskManagers: reports,
    stages: sources.stages,
    ...(shuffleWorkers === undefined ? {} : { shuffleWorkers }),
  };
}
