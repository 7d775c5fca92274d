import {
  isHighAvailabilityModeActivated,
  type RestClusterClient,
  type SluiceProcess,
} from "@sluice/cluster";
import { ConfigurationError, TimeoutError } from "@sluice/core";
import { type JobManagerFailover, LeaderKills, StandbyCluster } from "@sluice/harness";
import { HighAvailabilityOptions } from "@sluice/runtime-api";
import type { DemoOptions } from "./cli.js";
import { formatDuration } from "./format.js";
import type { DemoIO } from "./local-word-count-cluster.js";
import { RestClusterView } from "./rest-cluster-view.js";
import {
  type ClusterEnd,
  type DemoConfiguration,
  headerOf,
  JOB_MODULE_DIR,
  type WordCountCluster,
} from "./word-count-cluster.js";

/** How long the job managers may take to elect a leader and the task managers to register. */
const STARTUP_TIMEOUT_MS = 60_000;
/** How often the start-up looks whether a leader serves and the task managers registered. */
const STARTUP_POLL_MS = 100;

/**
 * `--job-managers N`: standby job managers on this host, as on several hosts — N `sluice
 * jobmanager` processes under high availability (one wins the election, the others wait), the
 * task managers as `sluice taskmanager` processes that find the leader through leader retrieval,
 * and, without `high-availability.etcd.endpoints`, an etcd of the demo's own (all of it a
 * {@link StandbyCluster} of the harness). The demo follows the job through the leader's REST
 * endpoint, from one leader to the next; with `--kill-job-manager-after` it SIGKILLs the leader at
 * each given time and times the failovers. The job's end is the one the leader that finished it
 * reports.
 */
export class StandbyWordCountCluster implements WordCountCluster {
  readonly shuffle: string;
  readonly shuffleModule: string;
  readonly recovery: DemoConfiguration["recovery"];
  readonly taskManagers: number;
  private kills: LeaderKills | undefined;
  private readonly view: RestClusterView;
  private cluster!: StandbyCluster;
  /** Once the job ended: lines about the failovers, printed after the summary. */
  private ended = false;

  private constructor(
    private readonly options: DemoOptions,
    private readonly config: DemoConfiguration,
    private readonly io: DemoIO,
  ) {
    this.shuffle = config.shuffle;
    this.shuffleModule = config.plugin.file;
    this.recovery = config.recovery;
    this.taskManagers = options.taskManagers;
    this.view = new RestClusterView(() => this.rest());
  }

  /**
   * Starts etcd (if needed), the job managers and the task managers; resolves once a leader
   * serves its REST endpoint and every task manager registered with it.
   *
   * @throws ConfigurationError for a configuration without high availability, or no etcd;
   *   TimeoutError when no leader with every task manager came in time (after closing all).
   */
  static async start(
    options: DemoOptions,
    config: DemoConfiguration,
    io: DemoIO,
  ): Promise<StandbyWordCountCluster> {
    const standby = new StandbyWordCountCluster(options, config, io);
    await standby.startCluster();
    return standby;
  }

  private say(text: string): void {
    this.io.human.write(text);
  }

  private async startCluster(): Promise<void> {
    const { configuration } = this.config;
    if (!isHighAvailabilityModeActivated(configuration)) {
      throw new ConfigurationError(
        `--job-managers runs standby job managers, which need high availability: give --ha etcd (${HighAvailabilityOptions.HA_MODE.key} is none)`,
      );
    }
    this.cluster = await StandbyCluster.start({
      configuration: this.config.configuration,
      jobManagers: this.options.jobManagers ?? 1,
      taskManagers: this.options.taskManagers,
      usrlib: [JOB_MODULE_DIR],
      output: (line, stream, process) => this.processLine(line, stream, process),
      events: {
        onEtcdStarted: ({ endpoint, pid, binary }) =>
          this.say(
            `started etcd (${binary}, pid ${pid}) at ${endpoint} with its data in a temporary folder; it is stopped at the end\n`,
          ),
        onSharedFolder: (folder) =>
          this.say(`the job managers share ${folder} (removed at the end)\n`),
        onJobManagerStarted: (jm) => this.say(`job manager started: pid ${jm.process.pid}\n`),
        onTaskManagerStarted: (tm) => this.say(`task manager started: pid ${tm.pid}\n`),
        onLeader: (leader) =>
          this.say(
            `leader retrieval: the leader is ${leader.jobManager === undefined ? leader.address : `job manager pid ${leader.jobManager.process.pid}`} (fencing token ${leader.fencingToken})\n`,
          ),
        onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`),
      },
    });
    try {
      const deadline = Date.now() + STARTUP_TIMEOUT_MS;
      for (;;) {
        const registered = await this.rest()
          ?.get<{ taskmanagers: number }>("/overview")
          .then((overview) => overview.taskmanagers)
          .catch(() => 0);
        if ((registered ?? 0) >= this.options.taskManagers) break;
        if (Date.now() > deadline) {
          throw new TimeoutError(
            `no job manager led with ${this.options.taskManagers} task managers registered within ${STARTUP_TIMEOUT_MS} ms`,
          );
        }
        await new Promise((resolve) => setTimeout(resolve, STARTUP_POLL_MS));
      }
    } catch (error) {
      await this.cluster.close();
      throw error;
    }
    this.say(headerOf(this.options, this.options.taskManagers, this.shuffle));
    this.say(`dashboard: ${this.rest()?.url}/\n`);
  }

  rest(): RestClusterClient | undefined {
    return this.cluster.leader?.jobManager?.rest;
  }

  async jobSubmitted(jobId: string): Promise<void> {
    const times = this.options.killJobManagerAfterMs;
    if (times.length === 0) return;
    this.kills = new LeaderKills(this.cluster, jobId, times, this.recovery.mode !== undefined, {
      onKilled: ({ killed, replacement, dueMs, intoMs, latestCheckpoint }) =>
        this.say(
          `killed the leader, job manager pid ${killed.process.pid}, with SIGKILL ${formatDuration(intoMs)} into the job` +
            ` (--kill-job-manager-after ${dueMs}${latestCheckpoint === undefined ? "" : `; latest stored checkpoint ${latestCheckpoint}`});` +
            ` job manager pid ${replacement.process.pid} replaces it as a standby\n`,
        ),
      onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`),
    });
    this.kills.start();
  }

  waiting(): readonly string[] {
    return [];
  }

  async finish(): Promise<ClusterEnd> {
    await this.kills?.stop();
    this.ended = true;
    const finisher = this.cluster.leader?.jobManager;
    const taskManagers = await this.view.taskManagers().catch(() => []);
    const failovers = this.kills?.failovers() ?? [];
    const epilogue = [
      `the job ended on job manager pid ${finisher?.process.pid ?? "(none leads)"}; ${failovers.length} of ${this.options.killJobManagerAfterMs.length} leader kills done`,
      ...failovers.map((f, i) => this.failoverLine(f, i)),
    ];
    return {
      processes: await this.view
        .processes(
          taskManagers,
          finisher === undefined ? [] : [{ role: "jobmanager", pid: finisher.process.pid }],
        )
        .catch(() => []),
      taskManagers,
      differences: [],
      epilogue,
      json: { jobManagerFailovers: failovers },
    };
  }

  async close(): Promise<void> {
    this.ended = true;
    await this.kills?.stop();
    await this.cluster?.close();
  }

  private failoverLine(f: JobManagerFailover, i: number): string {
    const from =
      this.recovery.mode === undefined
        ? ""
        : `, from ${f.restoredFromCheckpoint === null ? "the start" : `checkpoint ${f.restoredFromCheckpoint}`}`;
    return (
      `  failover ${i + 1}: killed pid ${f.killedPid}; a standby elected after ${f.detectionMs === null ? "-" : formatDuration(f.detectionMs)}, ` +
      `the job running again after ${f.recoveryMs === null ? "-" : formatDuration(f.recoveryMs)}${from}`
    );
  }

  /**
   * A line of a job manager (forwarded, with its pid) or a task manager (its warnings and errors);
   * once the job ended, what the processes say as they stop is no news.
   */
  private processLine(line: string, stream: "stdout" | "stderr", process: SluiceProcess): void {
    if (this.ended) return;
    if (process.command === "jobmanager") {
      const out = stream === "stderr" ? this.io.stderr : this.io.human;
      out.write(`[job manager ${process.pid}] ${line}\n`);
      return;
    }
    if (stream === "stdout") return;
    const prefixed = /^(warning|error): (.*)$/s.exec(line);
    this.io.stderr.write(
      prefixed === null
        ? `task manager (pid ${process.pid}): ${line}\n`
        : `${prefixed[1]}: task manager (pid ${process.pid}): ${prefixed[2]}\n`,
    );
  }
}
