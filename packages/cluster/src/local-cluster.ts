import { existsSync } from "node:fs";
import path from "node:path";
import { IllegalStateError, TimeoutError } from "@sluice/core";
import { Configuration, type JobExecution, type JobGraph, type Placement } from "@sluice/runtime";
import { JobManagerOptions } from "@sluice/runtime-api";
import { DISTRIBUTION_DIR, DISTRIBUTION_LOADER } from "./cli/distribution.js";
import {
  JobManager,
  type JobManagerDeployOptions,
  type JobManagerStartOptions,
} from "./job-manager.js";
import { type LocalProcessOutput, LocalTaskManagerProcess } from "./local-task-manager-process.js";
import type { RegisteredTaskManager } from "./registered-task-manager.js";

/** Options of {@link LocalCluster.start}. */
export interface LocalClusterOptions {
  /**
   * The cluster's configuration: the job manager's, which task managers receive when they
   * register (host-local keys aside). `jobmanager.rpc.address` defaults to 127.0.0.1 and
   * `jobmanager.rpc.port` to a free port.
   */
  readonly configuration?: Configuration;
  /** Task manager processes started with the cluster (default 1). */
  readonly taskManagers?: number;
  /** Folders the task managers resolve job modules from (`--usrlib`), before their cwd. */
  readonly usrlib?: readonly string[];
  /** Keys only the task manager processes get (`-D key=value`), e.g. `taskmanager.host`. */
  readonly taskManagerConfiguration?: Readonly<Record<string, string | number | boolean>>;
  /** Where the task managers' output goes (default: this process's stdout and stderr). */
  readonly output?: LocalProcessOutput;
  /** How long {@link LocalCluster.start} waits for the task managers to register (default 60 s). */
  readonly startTimeoutMs?: number;
  /** The job manager's options (callbacks, HA services, ...). */
  readonly jobManager?: JobManagerStartOptions;
}

/**
 * The `sluice` entry point the task manager processes run: the built one, also when this module
 * runs from its TypeScript source (in this repository's tests).
 */
const SLUICE_MAIN = path.join(DISTRIBUTION_DIR, "dist", "cli", "main.js");

const DEFAULT_START_TIMEOUT_MS = 60_000;

/**
 * A whole cluster on this host (Flink's MiniCluster, with real processes): a {@link JobManager} in
 * this process and task managers as `sluice taskmanager` child processes that register over the
 * control plane on 127.0.0.1 exactly as remote ones do, so a job runs as it would across hosts.
 * For tests and one-host deployments; the `sluice` commands run the same processes on many hosts.
 */
export class LocalCluster {
  private readonly processes: LocalTaskManagerProcess[] = [];
  private closing: Promise<void> | undefined;
  /** Who waits for the registration of the task manager process with a pid. */
  private readonly registrations: Map<number, (taskManager: RegisteredTaskManager) => void>;

  private constructor(
    /** The job manager, in this process. */
    readonly jobManager: JobManager,
    registrations: Map<number, (taskManager: RegisteredTaskManager) => void>,
    private readonly taskManagerArgs: readonly string[],
    private readonly output: LocalProcessOutput,
    private readonly startTimeoutMs: number,
  ) {
    this.registrations = registrations;
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
    const jobManager = await JobManager.start(configuration, {
      loader: DISTRIBUTION_LOADER,
      ...options.jobManager,
      onTaskManagerRegistered: (taskManager) => {
        registrations.get(taskManager.pid)?.(taskManager);
        options.jobManager?.onTaskManagerRegistered?.(taskManager);
      },
    });
    const args = [
      "--jobmanager",
      `${jobManager.host.includes(":") ? `[${jobManager.host}]` : jobManager.host}:${jobManager.port}`,
      ...(options.usrlib ?? []).flatMap((folder) => ["--usrlib", path.resolve(folder)]),
      ...Object.entries(options.taskManagerConfiguration ?? {}).flatMap(([key, value]) => [
        "-D",
        `${key}=${value}`,
      ]),
    ];
    const cluster = new LocalCluster(
      jobManager,
      registrations,
      args,
      options.output ?? "inherit",
      options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    );
    try {
      await Promise.all(
        Array.from({ length: options.taskManagers ?? 1 }, () => cluster.startTaskManager()),
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
  async startTaskManager(): Promise<LocalTaskManagerProcess> {
    if (this.closing !== undefined) throw new IllegalStateError("the local cluster is closing");
    const process = new LocalTaskManagerProcess(SLUICE_MAIN, this.taskManagerArgs, this.output);
    this.processes.push(process);
    const registered = await this.registrationOf(process);
    process.registered = registered;
    return process;
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
            }, 10_000);
          });
          await Promise.race([process.exited, late]);
          clearTimeout(timer);
          await process.exited;
        }),
      );
    })();
    return this.closing;
  }

  /** Resolves with the registration of `process` (by its pid) once the job manager has it. */
  private registrationOf(process: LocalTaskManagerProcess): Promise<RegisteredTaskManager> {
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
            `the task manager process ${process.pid} did not register with the job manager at ${this.jobManager.url} within ${this.startTimeoutMs} ms`,
          ),
        );
      }, this.startTimeoutMs);
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
