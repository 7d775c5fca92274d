import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { loadHighAvailabilityServices } from "@sluice/cluster";
import { ConfigurationError, deferred } from "@sluice/core";
import { type EtcdServer, etcdBinary, startEtcd } from "@sluice/ha-etcd/testing";
import { CheckpointingOptions, Configuration } from "@sluice/runtime";
import {
  HighAvailabilityOptions,
  type HighAvailabilityServices,
  type LeaderInformation,
  type LeaderRetrievalService,
} from "@sluice/runtime-api";
import { applyCheckpointingFlags, recoverySettingsOf } from "./checkpointing-options.js";
import type { DemoOptions } from "./cli.js";
import { APP_DIR } from "./demo-application.js";
import { formatDuration } from "./format.js";
import { settlesWithin } from "./job-failures.js";
import { configArguments, type DemoIO } from "./job-manager-role.js";
import { JOB_MANAGER_AT, JOB_RUNS_ON_LEADER } from "./leadership.js";
import { LocalTaskManagers } from "./local-task-managers.js";

/** How often a due leader kill looks whether the leader runs the job and completed a checkpoint. */
const KILL_POLL_MS = 50;
/** How long job managers and task managers get to exit once the job ended. */
const EXIT_GRACE_MS = 10_000;
/** The options of the one-command demo that only the launcher reads. */
const LAUNCHER_FLAGS = ["--job-managers", "--kill-job-manager-after", "--json"];

/** One failover of `--kill-job-manager-after`, as `--json` reports it. */
export interface JobManagerFailover {
  /** The killed leader's process id. */
  readonly killedPid: number;
  /** From the kill to leader retrieval reporting a newly elected leader; `null` if none was. */
  readonly detectionMs: number | null;
  /** From the kill to the job running on the new leader; `null` if it did not run again. */
  readonly recoveryMs: number | null;
  /** The checkpoint the new leader restored the job from; `null` when it started over. */
  readonly restoredFromCheckpoint: number | null;
}

/** A job-manager role process the launcher started. */
interface JobManagerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Its control-plane URL, once it said it (what leader retrieval reports). */
  address: string | undefined;
  /** The checkpoint it recovered the job from (`null`: from the start), once it said so. */
  restoredFrom: number | null | undefined;
  /** When the job ran on it (`performance.now()`), once it did. */
  runningAt: number | undefined;
  killed: boolean;
  exited: boolean;
  readonly exit: Promise<number | null>;
  /** Its stdout: with `--json`, its summary is the last line. */
  stdout: string;
}

/** A failover in progress: filled in as its standby is elected and runs the job. */
interface PendingFailover {
  readonly killed: JobManagerProcess;
  readonly fencingToken: string;
  readonly killedAt: number;
  detectionMs: number | null;
  recoveryMs: number | null;
  restoredFromCheckpoint: number | null;
}

/**
 * The one-command demo with `--job-managers N`: the demo process starts N `jobmanager` role
 * processes under high availability (one wins the election, the others wait as standbys) and the
 * task managers, which find the leader through leader retrieval, as they would on several hosts.
 * With `--kill-job-manager-after` it SIGKILLs the current leader at each given time (and starts a
 * new standby in its place, so that N job managers stay up, as Flink's HA test keeps them), and
 * times each failover: detection (a standby elected, as leader retrieval reports it) and recovery
 * (the job running on the new leader). The job's end is the one the job manager that finished
 * it prints; its exit code is the demo's.
 */
export class JobManagerFailoverLauncher {
  private readonly main = fileURLToPath(new URL("./main.js", import.meta.url));
  private readonly jobManagers: JobManagerProcess[] = [];
  private readonly failovers: PendingFailover[] = [];
  private local: LocalTaskManagers | undefined;
  private etcd: EtcdServer | undefined;
  private folder: string | undefined;
  private services: HighAvailabilityServices | undefined;
  private retriever: LeaderRetrievalService | undefined;
  private leader: LeaderInformation | undefined;
  /** When the job first ran on a leader: the kills' times count from here. */
  private jobStartedAt: number | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** The kills due, one after the other. */
  private kills: Promise<void> = Promise.resolve();
  private readonly finished = deferred<JobManagerProcess>();
  private ended = false;
  /** The job manager that ran the job last: its end is the job's. */
  private jobRunner: JobManagerProcess | undefined;
  /** The job's runner gave up its leadership itself: what other job managers say is moot. */
  private afterEnd = false;
  /** Whether the job takes checkpoints: then a leader is killed only after it stored one. */
  private checkpoints = false;
  /** The `-D` arguments every child gets on top of this process's configuration arguments. */
  private readonly extra: string[] = [];
  private readonly onExit = () => this.killAll("SIGKILL");
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.say(`interrupted by ${signal}: stopping the job managers and task managers\n`);
    for (const jm of this.jobManagers) if (!jm.exited) jm.child.kill("SIGTERM");
  };

  /**
   * @param options the parsed command line.
   * @param argv the command line as given: the job managers get it without the launcher's flags.
   */
  constructor(
    private readonly options: DemoOptions,
    private readonly argv: readonly string[],
    private readonly io: DemoIO,
  ) {}

  /** Runs the job; resolves with the exit code of the job manager that finished it. */
  async run(): Promise<number> {
    let configuration: Configuration;
    try {
      configuration = await this.prepare();
    } catch (error) {
      const code = (error as { code?: string }).code;
      this.io.stderr.write(
        `error: ${code === undefined ? "" : `[${code}] `}${(error as Error).message}\n`,
      );
      await this.cleanUp();
      return error instanceof ConfigurationError ? 2 : 1;
    }
    process.on("SIGINT", this.onSignal);
    process.on("SIGTERM", this.onSignal);
    process.on("exit", this.onExit);
    try {
      await this.followLeader(configuration);
      const count = this.options.jobManagers ?? 1;
      for (let i = 0; i < count; i++) this.startJobManager();
      this.local = LocalTaskManagers.start(
        this.options.taskManagers,
        undefined,
        [...configArguments(this.options), ...this.extra],
        (child, code, signal, error) => {
          if (this.ended && code === 0) return;
          const how = error?.message ?? (signal === null ? `code ${code}` : `signal ${signal}`);
          this.say(`task manager pid ${child.pid} exited (${how})\n`);
        },
      );
      for (const tm of this.local.processes) this.say(`task manager started: pid ${tm.pid}\n`);
      const finisher = await this.finished.promise;
      this.ended = true;
      return await this.report(finisher);
    } finally {
      for (const timer of this.timers) clearTimeout(timer);
      await this.stopAll();
      await this.cleanUp();
      process.off("SIGINT", this.onSignal);
      process.off("SIGTERM", this.onSignal);
      process.off("exit", this.onExit);
    }
  }

  /**
   * Reads the configuration as the job managers will; checks high availability is on; starts
   * etcd when no endpoint is configured, and puts what one host's job managers share (the HA
   * storage, the checkpoints) in a temporary folder unless configured.
   */
  private async prepare(): Promise<Configuration> {
    const { options } = this;
    const configuration = Configuration.load({
      ...(options.configFile === undefined ? {} : { configFile: options.configFile }),
      args: options.dynamicProperties,
      warnUnknownKeys: false,
    });
    if (options.highAvailability !== undefined) {
      configuration.set(HighAvailabilityOptions.HA_MODE.key, options.highAvailability);
    }
    applyCheckpointingFlags(configuration, options);
    this.checkpoints = recoverySettingsOf(configuration).mode !== undefined;
    const type = configuration.get(HighAvailabilityOptions.HA_MODE).trim().toLowerCase();
    if (type === "none") {
      throw new ConfigurationError(
        `--job-managers runs standby job managers, which need high availability: give --ha etcd (${HighAvailabilityOptions.HA_MODE.key} is none)`,
      );
    }
    const set = (key: string, value: string) => {
      configuration.set(key, value);
      this.extra.push(`-D${key}=${value}`);
    };
    if (type === "etcd" && !configuration.contains(HighAvailabilityOptions.HA_ETCD_ENDPOINTS)) {
      const binary = etcdBinary();
      if (binary === undefined) {
        throw new ConfigurationError(
          `--ha etcd needs an etcd: give -D ${HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key}=http://<host>:2379, or install etcd (Debian: etcd-server) for the demo to start its own`,
        );
      }
      this.etcd = await startEtcd();
      set(HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key, this.etcd.endpoint);
      this.say(
        `started etcd (${binary}, pid ${this.etcd.pid}) at ${this.etcd.endpoint} with its data in a temporary folder; it is stopped at the end\n`,
      );
    } else if (type === "etcd") {
      this.say(
        `using etcd at ${configuration.get(HighAvailabilityOptions.HA_ETCD_ENDPOINTS)} (${HighAvailabilityOptions.HA_ETCD_ENDPOINTS.key})\n`,
      );
    }
    const shared = [
      [HighAvailabilityOptions.HA_STORAGE_PATH, "ha"],
      [CheckpointingOptions.CHECKPOINTS_DIRECTORY, "checkpoints"],
    ] as const;
    for (const [option, name] of shared) {
      if (configuration.contains(option)) continue;
      this.folder ??= mkdtempSync(path.join(tmpdir(), "sluice-demo-ha-"));
      set(option.key, path.join(this.folder, name));
    }
    if (!configuration.contains(HighAvailabilityOptions.HA_CLUSTER_ID)) {
      // A namespace of this run's own: a shared etcd may hold another run's job, which the
      // job managers would otherwise recover.
      set(HighAvailabilityOptions.HA_CLUSTER_ID.key, `/demo-${process.pid}-${Date.now()}`);
    }
    if (this.folder !== undefined) {
      this.say(`the job managers share ${this.folder} (removed at the end)\n`);
    }
    return configuration;
  }

  /** Follows the election: which job manager leads, and when a standby took over. */
  private async followLeader(configuration: Configuration): Promise<void> {
    const services = await loadHighAvailabilityServices(
      configuration,
      { onWarning: (message) => this.io.stderr.write(`warning: ${message}\n`) },
      { applicationDirs: [APP_DIR] },
    );
    this.services = services;
    this.retriever = services.getJobManagerLeaderRetriever();
    await this.retriever.start({
      notifyLeaderAddress: (leader) => this.leaderChanged(leader),
      handleError: (error) =>
        this.io.stderr.write(`warning: leader retrieval failed: ${error.message}\n`),
    });
  }

  private leaderChanged(leader: LeaderInformation | undefined): void {
    this.leader = leader;
    if (leader === undefined) return;
    const runner = this.jobRunner;
    // The job's runner gave its leadership up itself (not killed): the job ended there.
    if (runner !== undefined && !runner.killed && runner.address !== leader.address) {
      this.afterEnd = true;
    }
    const now = performance.now();
    const jm = this.byAddress(leader.address);
    this.say(
      `leader retrieval: the leader is ${jm === undefined ? leader.address : `job manager pid ${jm.pid}`} (fencing token ${leader.fencingToken})\n`,
    );
    for (const failover of this.failovers) {
      if (failover.detectionMs === null && failover.fencingToken !== leader.fencingToken) {
        failover.detectionMs = now - failover.killedAt;
      }
    }
  }

  private byAddress(address: string): JobManagerProcess | undefined {
    return this.jobManagers.find((jm) => jm.address === address && !jm.killed);
  }

  /** Starts one `jobmanager` role process with this command line, less the launcher's flags. */
  private startJobManager(): JobManagerProcess {
    const child = spawn(
      process.execPath,
      [
        ...process.execArgv.filter((arg) => !arg.startsWith("--inspect")),
        this.main,
        "jobmanager",
        "--bind",
        "127.0.0.1:0",
        // Its summary as JSON on stdout, its human-readable lines on stderr (forwarded).
        "--json",
        ...withoutLauncherFlags(this.argv),
        ...this.extra,
      ],
      // Its own process group: Ctrl-C reaches the launcher, which stops the job managers.
      { stdio: ["ignore", "pipe", "pipe"], detached: true },
    );
    const exit = deferred<number | null>();
    const jm: JobManagerProcess = {
      child,
      pid: child.pid ?? -1,
      address: undefined,
      restoredFrom: undefined,
      runningAt: undefined,
      killed: false,
      exited: false,
      exit: exit.promise,
      stdout: "",
    };
    this.jobManagers.push(jm);
    child.stdout?.on("data", (chunk: Buffer) => {
      jm.stdout += chunk.toString();
    });
    if (child.stderr !== null) {
      createInterface({ input: child.stderr }).on("line", (line) => this.jobManagerLine(jm, line));
    }
    const exited = (code: number | null) => {
      if (jm.exited) return;
      jm.exited = true;
      exit.resolve(code);
      if (jm.killed || this.ended) return;
      // The job's end is that of the job manager that ran it last; one that never ran it (a
      // standby elected after the end) decides only when no job manager is left.
      const left = this.jobManagers.some((other) => !other.exited && !other.killed);
      if (jm !== this.jobRunner && left) return;
      this.ended = true;
      this.finished.resolve(jm);
    };
    child.on("error", (error) => {
      this.io.stderr.write(`error: job manager pid ${jm.pid} could not start: ${error.message}\n`);
      exited(null);
    });
    // After its output was read to the end: the summary is complete.
    child.on("close", (code) => exited(code));
    this.say(`job manager started: pid ${jm.pid}\n`);
    return jm;
  }

  /** A line of a job manager's human-readable output: forwarded, and what it tells the launcher. */
  private jobManagerLine(jm: JobManagerProcess, line: string): void {
    const now = performance.now();
    this.parseLine(jm, line, now);
    // Once the job ended, a standby may still be elected, find no job and complain: not news.
    if (this.afterEnd && jm !== this.jobRunner) return;
    const stream = /^(error|warning):/.test(line) ? this.io.stderr : this.io.human;
    stream.write(`[job manager ${jm.pid}] ${line}\n`);
  }

  private parseLine(jm: JobManagerProcess, line: string, now: number): void {
    if (line.startsWith(JOB_MANAGER_AT)) {
      jm.address = line.slice(JOB_MANAGER_AT.length).trim().split(/\s/)[0];
      if (this.leader?.address === jm.address) this.leaderChanged(this.leader);
      return;
    }
    const recovering =
      /^recovering job \S+ left by the previous leader, (?:from checkpoint (\d+))?/.exec(line);
    if (recovering !== null) {
      jm.restoredFrom = recovering[1] === undefined ? null : Number(recovering[1]);
      return;
    }
    if (!line.startsWith(JOB_RUNS_ON_LEADER)) return;
    jm.runningAt = now;
    this.jobRunner = jm;
    this.afterEnd = false;
    jm.restoredFrom ??= null;
    for (const failover of this.failovers) {
      if (failover.recoveryMs !== null || failover.killed === jm) continue;
      failover.recoveryMs = now - failover.killedAt;
      failover.restoredFromCheckpoint = jm.restoredFrom;
    }
    if (this.jobStartedAt === undefined) {
      this.jobStartedAt = now;
      for (const afterMs of this.options.killJobManagerAfterMs) this.scheduleKill(afterMs);
    }
  }

  private scheduleKill(afterMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      // One kill at a time: the next waits until the new leader runs the job (and checkpointed).
      this.kills = this.kills.then(() => this.killLeaderWhenReady(afterMs));
    }, afterMs);
    this.timers.add(timer);
  }

  /**
   * SIGKILLs the leader once it runs the job and (with checkpoints) stored a checkpoint of its
   * own, so that each failover restores from a checkpoint; then starts a new standby.
   */
  private async killLeaderWhenReady(afterMs: number): Promise<void> {
    for (;;) {
      if (this.ended) return;
      const leader = this.leader;
      const jm = leader === undefined ? undefined : this.byAddress(leader.address);
      if (leader !== undefined && jm !== undefined && !jm.exited && jm.runningAt !== undefined) {
        const latest = await this.latestStoredCheckpoint();
        if (this.ended) return;
        const ready =
          !this.checkpoints ||
          (latest !== undefined && (jm.restoredFrom === null || latest > (jm.restoredFrom ?? -1)));
        if (ready && !jm.exited && this.leader === leader) {
          this.kill(jm, leader, afterMs, latest);
          return;
        }
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          resolve();
        }, KILL_POLL_MS);
        this.timers.add(timer);
      });
    }
  }

  private kill(
    jm: JobManagerProcess,
    leader: LeaderInformation,
    afterMs: number,
    latest: number | undefined,
  ): void {
    const into = performance.now() - (this.jobStartedAt ?? 0);
    jm.killed = true;
    jm.child.kill("SIGKILL");
    this.failovers.push({
      killed: jm,
      fencingToken: leader.fencingToken,
      killedAt: performance.now(),
      detectionMs: null,
      recoveryMs: null,
      restoredFromCheckpoint: null,
    });
    const replacement = this.startJobManager();
    this.say(
      `killed the leader, job manager pid ${jm.pid}, with SIGKILL ${formatDuration(into)} into the job` +
        ` (--kill-job-manager-after ${afterMs}${latest === undefined ? "" : `; latest stored checkpoint ${latest}`});` +
        ` job manager pid ${replacement.pid} replaces it as a standby\n`,
    );
  }

  /** The newest completed checkpoint of the job in the HA store, if any. */
  private async latestStoredCheckpoint(): Promise<number | undefined> {
    const services = this.services;
    if (services === undefined) return undefined;
    try {
      const [jobId] = await services.getJobGraphStore().getJobIds();
      if (jobId === undefined) return undefined;
      const latest = await services.createCompletedCheckpointStore(jobId, 1).getLatestCheckpoint();
      return latest === undefined ? undefined : Number(latest.checkpointId);
    } catch {
      // etcd busy or the job just removed: the next poll reads again.
      return undefined;
    }
  }

  /** Prints how the job ended on `finisher` and the failovers; resolves with its exit code. */
  private async report(finisher: JobManagerProcess): Promise<number> {
    const code = await finisher.exit;
    const failovers: JobManagerFailover[] = this.failovers.map((f) => ({
      killedPid: f.killed.pid,
      detectionMs: f.detectionMs === null ? null : Math.round(f.detectionMs),
      recoveryMs: f.recoveryMs === null ? null : Math.round(f.recoveryMs),
      restoredFromCheckpoint: f.restoredFromCheckpoint,
    }));
    const wanted = this.options.killJobManagerAfterMs.length;
    this.say(
      `the job ended on job manager pid ${finisher.pid} (exit code ${code ?? "none"}); ${failovers.length} of ${wanted} leader kills done\n`,
    );
    for (const [i, f] of failovers.entries()) {
      this.say(
        `  failover ${i + 1}: killed pid ${f.killedPid}; a standby elected after ${f.detectionMs === null ? "-" : formatDuration(f.detectionMs)}, ` +
          `the job running again after ${f.recoveryMs === null ? "-" : formatDuration(f.recoveryMs)}` +
          `${this.checkpoints ? `, from ${f.restoredFromCheckpoint === null ? "the start" : `checkpoint ${f.restoredFromCheckpoint}`}` : ""}\n`,
      );
    }
    if (this.options.json) {
      const line = finisher.stdout.trim().split("\n").pop() ?? "";
      let summary: Record<string, unknown>;
      try {
        summary = JSON.parse(line) as Record<string, unknown>;
      } catch {
        summary = {
          verified: false,
          error: `job manager pid ${finisher.pid} exited with code ${code} without a summary`,
        };
      }
      this.io.stdout.write(`${JSON.stringify({ ...summary, jobManagerFailovers: failovers })}\n`);
    }
    return code ?? 1;
  }

  /** The job ended: the standbys are stopped, and task managers that do not exit are killed. */
  private async stopAll(): Promise<void> {
    this.ended = true;
    for (const jm of this.jobManagers) if (!jm.exited) jm.child.kill("SIGTERM");
    const exits = [...this.jobManagers.map((jm) => jm.exit), this.local?.allExited()];
    if (!(await settlesWithin(Promise.all(exits), EXIT_GRACE_MS))) this.killAll("SIGKILL");
    await settlesWithin(Promise.all(exits), EXIT_GRACE_MS);
    await this.retriever?.stop().catch(() => undefined);
    await this.services?.close().catch(() => undefined);
  }

  private killAll(signal: NodeJS.Signals): void {
    for (const jm of this.jobManagers) if (!jm.exited) jm.child.kill(signal);
    this.local?.killAll(signal);
  }

  private async cleanUp(): Promise<void> {
    await this.etcd?.stop();
    if (this.folder !== undefined) rmSync(this.folder, { recursive: true, force: true });
  }

  private say(text: string): void {
    this.io.human.write(text);
  }
}

/** `argv` without the options only the launcher reads (and their values). */
export function withoutLauncherFlags(argv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = argv[0] === "--" ? 1 : 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    const flag = LAUNCHER_FLAGS.find((f) => arg === f || arg.startsWith(`${f}=`));
    if (flag === undefined) kept.push(arg);
    else if (arg === flag && flag !== "--json") i++;
  }
  return kept;
}
