import type { JobDetailsInfo, RestClusterClient, TaskManagerMetric } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import {
  type BatchSummary,
  batchShuffleReports,
  compressionCodecOf,
  stagesOf,
} from "./batch-mode.js";
import { type RecoverySettings, recoverySettingsOf } from "./checkpointing-options.js";
import type { ListedTaskManager } from "./job-report.js";
import type { ProcessReport } from "./summary.js";

/** A task manager as `GET /taskmanagers` lists it. */
interface TaskManagerListing extends ListedTaskManager {
  readonly host: string;
}

/**
 * What the demo reads of a cluster it does not run in its own process (a session cluster, or
 * standby job managers), through the REST API of the job manager that leads: the configuration
 * it runs jobs with, and after a job its task managers, their network buffers and batch files.
 */
export class RestClusterView {
  constructor(private readonly rest: () => RestClusterClient | undefined) {}

  private client(): RestClusterClient {
    const client = this.rest();
    if (client === undefined) throw new Error("no job manager leads the cluster now");
    return client;
  }

  /**
   * What the job manager's configuration (`GET /jobmanager/config`) says about the jobs it runs:
   * their checkpoints and restarts, and the codec of their blocking partitions.
   */
  async settings(): Promise<{ recovery: RecoverySettings; codec: string }> {
    const entries = await this.client().get<{ key: string; value: string }[]>("/jobmanager/config");
    const configuration = new Configuration();
    for (const { key, value } of entries) {
      if (/^(execution\.checkpointing|restart-strategy|taskmanager\.network)\./.test(key)) {
        configuration.set(key, value);
      }
    }
    return {
      recovery: recoverySettingsOf(configuration),
      codec: compressionCodecOf(configuration),
    };
  }

  /** Every task manager that registered with the leader (`GET /taskmanagers`). */
  async taskManagers(): Promise<TaskManagerListing[]> {
    const { taskmanagers } = await this.client().get<{ taskmanagers: TaskManagerListing[] }>(
      "/taskmanagers",
    );
    return taskmanagers;
  }

  /**
   * The task managers as the summary shows them, after the job: the network buffers of each
   * still connected (all free once its partitions were released), no peak RSS (they keep
   * running); `jobManagers` leads the table.
   */
  async processes(
    taskManagers: readonly TaskManagerListing[],
    jobManagers: readonly ProcessReport[],
  ): Promise<ProcessReport[]> {
    const client = this.client();
    const rows = await Promise.all(
      taskManagers.map(async (tm): Promise<ProcessReport> => {
        if (!tm.connected) return { role: "taskmanager", index: tm.index, pid: tm.pid, lost: true };
        const metrics = await client
          .get<TaskManagerMetric[]>(
            `/taskmanagers/${tm.id}/metrics?get=Status.Shuffle.Netty.AvailableMemorySegments,Status.Shuffle.Netty.TotalMemorySegments`,
          )
          .catch(() => []);
        const [available, total] = [
          "Status.Shuffle.Netty.AvailableMemorySegments",
          "Status.Shuffle.Netty.TotalMemorySegments",
        ].map((id) => Number(metrics.find((m) => m.id === id)?.value ?? Number.NaN));
        return {
          role: "taskmanager",
          index: tm.index,
          pid: tm.pid,
          ...(available === undefined || total === undefined || Number.isNaN(available + total)
            ? {}
            : { bufferPool: { available, total } }),
        };
      }),
    );
    return [...jobManagers, ...rows];
  }

  /** Batch mode: what each connected task manager's blocking partitions wrote, and the stages. */
  async batchSummary(
    taskManagers: readonly TaskManagerListing[],
    job: JobDetailsInfo,
    codec: string,
  ): Promise<{ batch: BatchSummary; missing: boolean }> {
    const reports = await batchShuffleReports(
      this.client(),
      taskManagers.filter((tm) => tm.connected).map((tm) => tm.id),
    );
    return {
      batch: {
        codec,
        taskManagers: reports.filter((report) => report !== null),
        stages: stagesOf(job),
      },
      missing: reports.some((report) => report === null),
    };
  }
}
