import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  DISTRIBUTION_LOADER,
  type LocalProcessOutput,
  loadHighAvailabilityServices,
  RestClusterClient,
  SluiceProcess,
} from "@sluice/cluster";
import { ConfigurationError, IllegalStateError } from "@sluice/core";
import { type EtcdServer, etcdBinary, startEtcd } from "@sluice/ha-etcd/testing";
import { CheckpointingOptions, type Configuration } from "@sluice/runtime";
import {
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  JobManagerOptions,
  type LeaderInformation,
  type LeaderRetrievalService,
  RestOptions,
} from "@sluice/runtime-api";

/** How long the job managers and task managers get to exit when the cluster closes. */
const EXIT_GRACE_MS = 10_000;

/** A `sluice jobmanager` process of a {@link StandbyCluster}, on the ports the cluster chose. */
export interface StandbyJobManager {
  readonly process: SluiceProcess;
  /** Its control plane (`jobmanager.rpc.port`): what leader retrieval names it by. */
  readonly rpcPort: number;
  /** Its REST endpoint (`rest.port`). */
  readonly restPort: number;
  /** A client of its REST endpoint. */
  readonly rest: RestClusterClient;
  /** Whether the cluster killed it (SIGKILL). */
  readonly killed: boolean;
}

/** The leader now, as leader retrieval names it. */
export interface StandbyLeader {
  readonly fencingToken: string;
  /** The address it published (`ws://127.0.0.1:<rpc port>`). */
  readonly address: string;
  /** Its process, when it is one of the cluster's (not killed). */
  readonly jobManager: StandbyJobManager | undefined;
}

/** What a {@link StandbyCluster} tells as it runs. */
export interface StandbyClusterEvents {
  /** It started its own etcd (no `high-availability.etcd.endpoints` was configured). */
  readonly onEtcdStarted?: (etcd: {
    readonly endpoint: string;
    readonly pid: number;
    /** The etcd binary it ran. */
    readonly binary: string;
  }) => void;
  /** It put the HA storage and checkpoints in this temporary folder (removed at close). */
  readonly onSharedFolder?: (folder: string) => void;
  readonly onJobManagerStarted?: (jobManager: StandbyJobManager) => void;
  readonly onTaskManagerStarted?: (process: SluiceProcess) => void;
  /** Leader retrieval names a new leader. */
  readonly onLeader?: (leader: StandbyLeader) => void;
  readonly onWarning?: (message: string) => void;
}

/** Options of {@link StandbyCluster.start}. */
export interface StandbyClusterOptions {
  /**
   * Every process's configuration (`-D` of each): `high-availability.type` (not `none`) and its
   * keys. Without `high-availability.etcd.endpoints` (type etcd) the cluster starts its own etcd;
   * without `high-availability.storageDir` and `state.checkpoints.dir`, a temporary folder holds
   * them; without `high-availability.cluster-id`, a namespace of this cluster's own.
   */
  readonly configuration: Configuration;
  /** `sluice jobmanager` processes: one leader, the others standbys. */
  readonly jobManagers: number;
  /** `sluice taskmanager` processes: they find the leader through leader retrieval. */
  readonly taskManagers: number;
  /** The task managers' `--usrlib` folders. */
  readonly usrlib?: readonly string[];
  /** Where the processes' output goes (default: this process's). */
  readonly output?: LocalProcessOutput;
  readonly events?: StandbyClusterEvents;
}

/**
 * A session cluster under high availability on this host, as on several hosts (Flink's HA test
 * set-up): `sluice jobmanager` processes on ports this cluster chose, which elect a leader in etcd
 * (the others wait as standbys), and `sluice taskmanager` processes that find the leader through
 * leader retrieval and follow it to the next one. The cluster follows the election as any client
 * would, through the high-availability services' leader retrieval, and knows each job manager by
 * the address it publishes; it can kill the leader and start a standby in its place. Nothing is
 * read from the processes' output.
 */
export class StandbyCluster {
  private readonly jobManagers: StandbyJobManager[] = [];
  private readonly taskManagerProcesses: SluiceProcess[] = [];
  private current: LeaderInformation | undefined;
  private readonly leaderListeners = new Set<(leader: StandbyLeader) => void>();
  private closing: Promise<void> | undefined;
  private readonly killOnExit = () => {
    for (const jm of this.jobManagers) jm.process.kill("SIGKILL");
    for (const tm of this.taskManagerProcesses) tm.kill("SIGKILL");
  };

  private constructor(
    private readonly args: readonly string[],
    private readonly options: StandbyClusterOptions,
    private readonly services: HighAvailabilityServices,
    private readonly retriever: LeaderRetrievalService,
    private readonly etcd: EtcdServer | undefined,
    private readonly folder: string | undefined,
  ) {
    process.on("exit", this.killOnExit);
  }

  /**
   * Starts etcd if needed, the job managers and the task managers, and follows the election.
   *
   * @throws ConfigurationError when `high-availability.type` is `none`, or etcd is needed and none
   *   is installed; the HA services' errors. Nothing is left running when it fails.
   */
  static async start(options: StandbyClusterOptions): Promise<StandbyCluster> {
    const configuration = options.configuration;
    const events = options.events ?? {};
    const type = configuration.get(HighAvailabilityOptions.HA_MODE).trim().toLowerCase();
    if (type === "none") {
      throw new ConfigurationError(
        `standby job managers need high availability: set ${HighAvailabilityOptions.HA_MODE.key} (it is none)`,
      );
    }
    let etcd: EtcdServer | undefined;
    let folder: string | undefined;
    const cleanUp = async () => {
      await etcd?.stop();
      if (folder !== undefined) rmSync(folder, { recursive: true, force: true });
    };
    try {
      if (type === "etcd" && !configuration.contains(HighAvailabilityOptions.HA_ETCD_ENDPOINTS)) {
        const binary = etcdBinary();
        if (binary === undefined) {
          throw new ConfigurationError(
            `high availability on etcd needs an etcd: set ${HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key}=http://<host>:2379, or install etcd (Debian: etcd-server) for the cluster to start its own`,
          );
        }
        etcd = await startEtcd();
        configuration.set(HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key, etcd.endpoint);
        events.onEtcdStarted?.({ endpoint: etcd.endpoint, pid: etcd.pid, binary });
      }
      for (const [option, name] of [
        [HighAvailabilityOptions.HA_STORAGE_PATH, "ha"],
        [CheckpointingOptions.CHECKPOINTS_DIRECTORY, "checkpoints"],
      ] as const) {
        if (configuration.contains(option)) continue;
        folder ??= mkdtempSync(path.join(tmpdir(), "sluice-standby-"));
        configuration.set(option.key, path.join(folder, name));
      }
      if (folder !== undefined) events.onSharedFolder?.(folder);
      if (!configuration.contains(HighAvailabilityOptions.HA_CLUSTER_ID)) {
        // A namespace of this cluster's own: a shared etcd may hold another cluster's jobs, which
        // its job managers would otherwise take over.
        configuration.set(
          HighAvailabilityOptions.HA_CLUSTER_ID.key,
          `/standby-${process.pid}-${Date.now()}`,
        );
      }
      const services = await loadHighAvailabilityServices(
        configuration,
        { onWarning: events.onWarning ?? (() => {}) },
        DISTRIBUTION_LOADER,
      );
      const retriever = services.getJobManagerLeaderRetriever();
      const args = Object.entries(configuration.toObject()).flatMap(([key, value]) => [
        "-D",
        `${key}=${typeof value === "object" ? JSON.stringify(value) : String(value)}`,
      ]);
      const cluster = new StandbyCluster(args, options, services, retriever, etcd, folder);
      await retriever.start({
        notifyLeaderAddress: (leader) => cluster.leaderChanged(leader),
        handleError: (error) => events.onWarning?.(`leader retrieval failed: ${error.message}`),
      });
      try {
        for (let i = 0; i < options.jobManagers; i++) await cluster.startJobManager();
        for (let i = 0; i < options.taskManagers; i++) cluster.startTaskManager();
      } catch (error) {
        await cluster.close();
        throw error;
      }
      return cluster;
    } catch (error) {
      if (etcd !== undefined || folder !== undefined) await cleanUp();
      throw error;
    }
  }

  /** The high-availability services the cluster follows the election with (its stores too). */
  get highAvailability(): HighAvailabilityServices {
    return this.services;
  }

  /** The etcd endpoint (`high-availability.etcd.endpoints`). */
  get etcdEndpoint(): string | undefined {
    return this.options.configuration.getOptional(HighAvailabilityOptions.HA_ETCD_ENDPOINTS);
  }

  /** Every job manager started, in start order (killed ones too). */
  get jobManagerProcesses(): readonly StandbyJobManager[] {
    return [...this.jobManagers];
  }

  /** Every task manager process started, in start order. */
  get taskManagers(): readonly SluiceProcess[] {
    return [...this.taskManagerProcesses];
  }

  /** The leader now, as leader retrieval last named it; undefined while there is none. */
  get leader(): StandbyLeader | undefined {
    const current = this.current;
    if (current === undefined) return undefined;
    return { ...current, jobManager: this.byAddress(current.address) };
  }

  /** Calls `listener` with every leader leader retrieval names from now on; returns the stop. */
  onLeaderChange(listener: (leader: StandbyLeader) => void): () => void {
    this.leaderListeners.add(listener);
    return () => this.leaderListeners.delete(listener);
  }

  /** A `sluice jobmanager` on free ports of 127.0.0.1; a standby until it is elected. */
  async startJobManager(): Promise<StandbyJobManager> {
    const rpcPort = await freePort();
    const restPort = await freePort();
    const process = new SluiceProcess(
      "jobmanager",
      [
        ...this.args,
        "-D",
        `${JobManagerOptions.ADDRESS.key}=127.0.0.1`,
        "-D",
        `${JobManagerOptions.PORT.key}=${rpcPort}`,
        "-D",
        `${RestOptions.ADDRESS.key}=127.0.0.1`,
        "-D",
        `${RestOptions.PORT.key}=${restPort}`,
      ],
      { output: this.options.output ?? "inherit" },
    );
    const jobManager = {
      process,
      rpcPort,
      restPort,
      rest: new RestClusterClient({ host: "127.0.0.1", port: restPort }),
      killed: false,
    };
    this.jobManagers.push(jobManager);
    this.options.events?.onJobManagerStarted?.(jobManager);
    // It may be elected before it was known here.
    if (this.current !== undefined && this.byAddress(this.current.address) === jobManager) {
      this.leaderChanged(this.current);
    }
    return jobManager;
  }

  /** A `sluice taskmanager` that registers with the leader (and the next one). */
  startTaskManager(): SluiceProcess {
    const process = new SluiceProcess(
      "taskmanager",
      [...(this.options.usrlib ?? []).flatMap((folder) => ["--usrlib", folder]), ...this.args],
      { output: this.options.output ?? "inherit" },
    );
    this.taskManagerProcesses.push(process);
    this.options.events?.onTaskManagerStarted?.(process);
    return process;
  }

  /**
   * SIGKILLs the leader and starts a standby in its place (so that as many job managers stay up,
   * as Flink's HA test keeps them). Resolves with the one killed and its replacement.
   *
   * @throws IllegalStateError when no job manager of the cluster leads now.
   */
  async killLeader(): Promise<{ killed: StandbyJobManager; replacement: StandbyJobManager }> {
    const killed = this.leader?.jobManager;
    if (killed === undefined)
      throw new IllegalStateError("no job manager of the cluster leads now");
    (killed as { killed: boolean }).killed = true;
    killed.process.kill("SIGKILL");
    return { killed, replacement: await this.startJobManager() };
  }

  /**
   * Stops every process (SIGTERM; SIGKILL after 10 s), the election's follower, the etcd it
   * started, and removes its temporary folder. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const processes = [...this.jobManagers.map((jm) => jm.process), ...this.taskManagerProcesses];
      for (const process of processes) process.kill("SIGTERM");
      await Promise.all(
        processes.map(async (process) => {
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            process.exited,
            new Promise<void>((resolve) => {
              timer = setTimeout(() => {
                process.kill("SIGKILL");
                resolve();
              }, EXIT_GRACE_MS);
            }),
          ]);
          clearTimeout(timer);
          await process.exited;
        }),
      );
      await this.retriever.stop().catch(() => undefined);
      await this.services.close().catch(() => undefined);
      await this.etcd?.stop();
      if (this.folder !== undefined) rmSync(this.folder, { recursive: true, force: true });
      process.off("exit", this.killOnExit);
    })();
    return this.closing;
  }

  private leaderChanged(leader: LeaderInformation | undefined): void {
    this.current = leader;
    if (leader === undefined) return;
    const named = { ...leader, jobManager: this.byAddress(leader.address) };
    this.options.events?.onLeader?.(named);
    for (const listener of [...this.leaderListeners]) listener(named);
  }

  private byAddress(address: string): StandbyJobManager | undefined {
    const port = Number(/:(\d+)\/?$/.exec(address)?.[1]);
    return this.jobManagers.find((jm) => jm.rpcPort === port && !jm.killed);
  }
}

/**
 * A port of 127.0.0.1 that was free a moment ago: where a process this cluster starts listens.
 * (`@sluice/core/testing` has the same, but it imports vitest, which a program must not load.)
 */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
