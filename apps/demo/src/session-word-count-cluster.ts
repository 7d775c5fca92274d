import { type JobDetailsInfo, RestClusterClient } from "@sluice/cluster";
import { batchDifferences } from "./batch-mode.js";
import type { RecoverySettings } from "./checkpointing-options.js";
import type { DemoOptions } from "./cli.js";
import type { DemoIO } from "./local-word-count-cluster.js";
import { RestClusterView } from "./rest-cluster-view.js";
import { type ClusterEnd, headerOf, type WordCountCluster } from "./word-count-cluster.js";
import { COUNT_VERTEX } from "./word-count-job.js";

/**
 * A running session cluster (`--jobmanager`): `sluice jobmanager` and `sluice taskmanager
 * --usrlib apps/demo/dist` processes the demo did not start. The demo submits the job to its REST
 * endpoint and follows it there; the cluster runs on afterwards, as Flink's session cluster does.
 */
export class SessionWordCountCluster implements WordCountCluster {
  readonly shuffleModule = undefined;
  private readonly view: RestClusterView;

  private constructor(
    private readonly client: RestClusterClient,
    readonly shuffle: string,
    readonly recovery: RecoverySettings,
    readonly taskManagers: number,
    private readonly codec: string,
    private readonly options: DemoOptions,
  ) {
    this.view = new RestClusterView(() => client);
  }

  /**
   * Asks the session cluster's REST endpoint what it runs (its plugin, task managers and
   * configuration), and prints the run's first lines.
   *
   * @throws ConfigurationError when the endpoint cannot be reached.
   */
  static async connect(options: DemoOptions, io: DemoIO): Promise<SessionWordCountCluster> {
    const address = options.jobManager as { host: string; port: number };
    const client = new RestClusterClient(address);
    const overview = await client.get<{ taskmanagers: number; "shuffle-plugin": string }>(
      "/overview",
    );
    const { recovery, codec } = await new RestClusterView(() => client).settings();
    const cluster = new SessionWordCountCluster(
      client,
      overview["shuffle-plugin"],
      recovery,
      overview.taskmanagers,
      codec,
      options,
    );
    io.human.write(headerOf(options, overview.taskmanagers, overview["shuffle-plugin"]));
    io.human.write(`dashboard: ${client.url}/\n`);
    return cluster;
  }

  rest(): RestClusterClient {
    return this.client;
  }

  async jobSubmitted(): Promise<void> {}

  waiting(): readonly string[] {
    return [];
  }

  async finish(
    _jobId: string,
    job: JobDetailsInfo | undefined,
    failed: boolean,
  ): Promise<ClusterEnd> {
    const taskManagers = await this.view.taskManagers();
    const differences: string[] = [];
    let batch: ClusterEnd["batch"];
    if (!failed && job !== undefined && this.options.mode === "batch") {
      const summary = await this.view.batchSummary(taskManagers, job, this.codec);
      batch = summary.batch;
      differences.push(...batchDifferences(summary.batch, COUNT_VERTEX));
      if (summary.missing) {
        differences.push(
          "a task manager's shuffle plugin registers no Status.Shuffle.Netty.BatchShuffle metrics; batch mode reports them",
        );
      }
    }
    return {
      processes: await this.view.processes(taskManagers, []),
      taskManagers,
      batch,
      differences,
    };
  }

  async close(): Promise<void> {}
}
