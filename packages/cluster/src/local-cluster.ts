import { existsSync } from "node:fs";
import path from "node:path";
import { IllegalStateError, TimeoutError } from "@sluice/core";
import { Configuration, type JobExecution, type JobGraph, type Placement } from "@sluice/runtime";
import { JobManagerOptions, SecurityOptions, TaskManagerOptions } from "@sluice/runtime-api";
import { DISTRIBUTION_LOADER, SLUICE_MAIN } from "./cli/distribution.js";
import { emitClusterWarning } from "./cluster-warning.js";
import { HOST_LOCAL_KEYS } from "./control-plane-messages.js";
import {
  JobManager,
  type JobManagerDeployOptions,
  type JobManagerStartOptions,
} from "./job-manager.js";
import { LocalTaskManagerProcess } from "./local-task-manager-process.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";
import type { LocalProcessOutput } from "./sluice-process.js";

/** Options of {@link LocalCluster.start}. */
export interface LocalClusterOptions {
  /**
   * The cluster's configuration: the job manager's, which task managers receive when they
   * register; they also get its host-local keys (TLS files, `taskmanager.host`, `io.tmp.dirs`),
   * which a job manager never ships, since they run on this host. `jobmanager.rpc.address`
   * defaults to 127.0.0.1 and `jobmanager.rpc.port` to a free port.
   */
  readonly configuration?: Configuration;
  /** Task manager processes started with the cluster (default 1). */
  readonly taskManagers?: number;
  /** Folders the task managers resolve job modules from (`--usrlib`), before their cwd. */
  readonly usrlib?: readonly string[];
  /**
   * Keys only the task manager processes get (`-D key=value`), on top of the host-local ones.
   * Default `taskmanager.registration.timeout`: 10 s unless the configuration sets it, since
   * their job manager is this process, and none comes back once it is gone.
   */
  readonly taskManagerConfiguration?: Readonly<Record<string, string | number | boolean>>;
  /** Where the task managers' output goes (default: this process's stdout and stderr). */
  readonly output?: LocalProcessOutput;
  /** How long {@link LocalCluster.start} waits for the task managers to register (default 60 s). */
  readonly startTimeoutMs?: number;
  /**
   * Start a task manager process in place of each one the job manager loses while the cluster
   * runs (Flink's active resource managers request a new worker for a lost one), so that a job
   * that restarts finds a replacement for its lost subtasks (default false).
   */
  readonly replaceLostTaskManagers?: boolean;
  /**
   * A task manager process was started: with the cluster, by {@link LocalCluster.startTaskManager},
   * or in place of `replacing` (see {@link LocalClusterOptions.replaceLostTaskManagers}); it has
   * not registered yet.
   */
  readonly onTaskManagerStarted?: (
    process: LocalTaskManagerProcess,
    replacing: RegisteredTaskManager | undefined,
  ) => void;
  /** The job manager's options (callbacks, HA services, ...). */
  readonly jobManager?: JobManagerStartOptions;
}

const DEFAULT_START_TIMEOUT_MS = 60_000;
/** How long a task manager of a local cluster tries to register again after losing it. */
const LOCAL_REGISTRATION_TIMEOUT = "10s";
/** How long {@link LocalCluster.close} waits for a process to exit before it kills it. */
const EXIT_TIMEOUT_MS = 10_000;

/**
 * Keys a task manager needs before it registers, besides its host's own: the job manager's
 * configuration reaches it only at registration, over a control plane that speaks TLS when
 * `security.ssl.internal.enabled` says so.
 */
const BEFORE_REGISTRATION_KEYS: ReadonlySet<string> = new Set([
  SecurityOptions.SSL_INTERNAL_ENABLED.key,
]);

/**
 * A whole cluster on this host (Flink's MiniCluster, with real processes): a {@link JobManager} in
 * this process and task managers as `sluice taskmanager` child processes that register over the
 * control plane on 127.0.0.1 exactly as remote ones do, so a job runs as it would across hosts.
 * For tests and one-host deployments; the `sluice` commands run the same processes on many hosts.
 * The task manager processes never outlive this one: they are killed when it exits.
 */
export class LocalCluster {
  private readonly processes: LocalTaskManagerProcess[] = [];
  private closing: Promise<void> | undefined;
  /** Who waits for the registration of the task manager process with a pid. */
  private readonly registrations: Map<number, (taskManager: RegisteredTaskManager) => void>;
  private readonly killOnExit = () => {
    for (const process of this.processes) process.kill("SIGKILL");
  };

  private constructor(
    /** The job manager, in this process. */
    readonly jobManager: JobManager,
    registrations: Map<number, (taskManager: RegisteredTaskManager) => void>,
    private readonly taskManagerArgs: readonly string[],
    private readonly options: LocalClusterOptions,
  ) {
    this.registrations = registrations;
    process.on("exit", this.killOnExit);
  }

  /**
   * Starts the job manager and `taskManagers` task manager processes, and resolves once every
   * one registered.
   *
   * @throws the job manager's start-up errors; TimeoutError (after closing everything) when a
   *   task manager does not register in time, naming it and how it exited if it did.
   */
  static async start(options: LocalClusterOptions = {}): Promise<LocalCluster> {
    if (!existsSync(SLUICE_MAIN)) {
      throw new IllegalStateError(
        `cannot start task manager processes: ${SLUICE_MAIN} does not exist (build @sluice/cluster first)`,
      );
    }
    const configuration = options.configuration ?? new Configuration();
    if (!configuration.contains(JobManagerOptions.ADDRESS)) {
      configuration.set(JobManagerOptions.ADDRESS.key, "127.0.0.1");
    }
    if (!configuration.contains(JobManagerOptions.PORT)) {
      configuration.set(JobManagerOptions.PORT.key, 0);
    }
    const registrations = new Map<number, (taskManager: RegisteredTaskManager) => void>();
    let cluster: LocalCluster | undefined;
    const jobManager = await JobManager.start(configuration, {
      loader: DISTRIBUTION_LOADER,
      ...options.jobManager,
      onTaskManagerRegistered: (taskManager) => {
        registrations.get(taskManager.pid)?.(taskManager);
        options.jobManager?.onTaskManagerRegistered?.(taskManager);
      },
      onTaskManagerLost: (taskManager, cause) => {
        options.jobManager?.onTaskManagerLost?.(taskManager, cause);
        cluster?.replace(taskManager);
      },
    });
    const taskManagerKeys: Record<string, string | number | boolean> = {};
    for (const [key, value] of Object.entries(configuration.toObject())) {
      if (
        (HOST_LOCAL_KEYS.has(key) || BEFORE_REGISTRATION_KEYS.has(key)) &&
        value !== null &&
        typeof value !== "object"
      ) {
        taskManagerKeys[key] = value as string | number | boolean;
      }
    }
    if (!configuration.contains(TaskManagerOptions.REGISTRATION_TIMEOUT)) {
      taskManagerKeys[TaskManagerOptions.REGISTRATION_TIMEOUT.key] = LOCAL_REGISTRATION_TIMEOUT;
    }
    Object.assign(taskManagerKeys, options.taskManagerConfiguration);
    const args = [
      "--jobmanager",
      `${jobManager.host.includes(":") ? `[${jobManager.host}]` : jobManager.host}:${jobManager.port}`,
      ...(options.usrlib ?? []).flatMap((folder) => ["--usrlib", path.resolve(folder)]),
      ...Object.entries(taskManagerKeys).flatMap(([key, value]) => ["-D", `${key}=${value}`]),
    ];
    cluster = new LocalCluster(jobManager, registrations, args, options);
    try {
      await Promise.all(
        Array.from({ length: options.taskManagers ?? 1 }, () =>
          (cluster as LocalCluster).startTaskManager(),
        ),
      );
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /** Every task manager process started, in start order (exited ones too). */
  get taskManagers(): readonly LocalTaskManagerProcess[] {
    return [...this.processes];
  }

  /**
   * Starts one more task manager process (e.g. to replace a lost one: a restarting job's lost
   * subtasks go to it) and resolves once it registered.
   *
   * @throws TimeoutError when it does not register in time (it is killed), naming how it exited
   *   if it did; IllegalStateError when the cluster is closing.
   */
  startTaskManager(): Promise<LocalTaskManagerProcess> {
    return this.launch(undefined);
  }

  /**
   * Deploys `graph` on the cluster's task managers (see {@link JobManager.deploy}).
   *
   * @throws as {@link JobManager.deploy}.
   */
  submit(
    graph: JobGraph,
    placement?: Placement,
    options?: JobManagerDeployOptions,
  ): Promise<JobExecution> {
    return this.jobManager.deploy(graph, placement, options);
  }

  /**
   * Closes the job manager, which shuts every task manager down, then waits for the processes to
   * exit; one that does not within 10 s is killed. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.jobManager.close({ reason: "the local cluster is closing" });
      await Promise.all(
        this.processes.map(async (process) => {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<void>((resolve) => {
            timer = setTimeout(() => {
              process.kill("SIGKILL");
              resolve();
            }, EXIT_TIMEOUT_MS);
          });
          await Promise.race([process.exited, late]);
          clearTimeout(timer);
          await process.exited;
        }),
      );
      process.off("exit", this.killOnExit);
    })();
    return this.closing;
  }

  /** `lost` was one of this cluster's task managers: another process takes its place. */
  private replace(lost: RegisteredTaskManager): void {
    if (this.options.replaceLostTaskManagers !== true || this.closing !== undefined) return;
    if (!this.processes.some((process) => process.pid === lost.pid)) return;
    const warn = this.options.jobManager?.onWarning ?? emitClusterWarning;
    this.launch(lost).catch((error: unknown) => {
      // Closing meanwhile ends the replacement too: that is no news.
      if (this.closing !== undefined) return;
      warn(
        `could not start a task manager to replace the lost ${lost.labelWithAddress}: ${(error as Error)?.message ?? String(error)}`,
      );
    });
  }

  private async launch(
    replacing: RegisteredTaskManager | undefined,
  ): Promise<LocalTaskManagerProcess> {
    if (this.closing !== undefined) throw new IllegalStateError("the local cluster is closing");
    const process = new LocalTaskManagerProcess(this.taskManagerArgs, {
      output: this.options.output ?? "inherit",
    });
    this.processes.push(process);
    this.options.onTaskManagerStarted?.(process, replacing);
    process.registered = await this.registrationOf(process);
    return process;
  }

  /** Resolves with the registration of `process` (by its pid) once the job manager has it. */
  private registrationOf(process: LocalTaskManagerProcess): Promise<RegisteredTaskManager> {
    const timeoutMs = this.options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        this.registrations.delete(process.pid);
      };
      const timer = setTimeout(() => {
        done();
        process.kill("SIGKILL");
        reject(
          new TimeoutError(
            `the task manager process ${process.pid} did not register with the job manager at ${this.jobManager.url} within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.registrations.set(process.pid, (registered) => {
        done();
        resolve(registered);
      });
      void process.exited.then((exit) => {
        if (!this.registrations.has(process.pid)) return;
        done();
        reject(
          new IllegalStateError(
            `the task manager process ${process.pid} exited before it registered (exit code ${exit.code}, signal ${exit.signal})${process.stderrTail.length === 0 ? "" : `; its last output: ${process.stderrTail.join(" | ")}`}`,
          ),
        );
      });
    });
  }
}
