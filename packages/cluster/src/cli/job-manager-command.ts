import { HighAvailabilityOptions } from "@sluice/runtime-api";
import type { Command } from "commander";
import { JobManager } from "../job-manager.js";
import { WebMonitorEndpoint } from "../rest/web-monitor-endpoint.js";
import { describeTaskManagerWait } from "../task-manager-waiters.js";
import {
  type ConfigurationFlags,
  loadProcessConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { DISTRIBUTION_LOADER } from "./distribution.js";
import {
  type CommandIO,
  ExitCode,
  exitCodeOf,
  formatError,
  runUntilSignal,
} from "./process-shell.js";

/**
 * `sluice jobmanager` (Flink's `bin/jobmanager.sh`): a job manager of a session cluster. It
 * listens for task managers on `jobmanager.rpc.address`/`jobmanager.rpc.port`, serves the REST
 * endpoint and dashboard on `rest.bind-address`/`rest.port`, runs the jobs submitted to it
 * (`sluice run`), and, under high availability (`high-availability.type`), stands
 * by until it is elected leader, then takes over the jobs the previous leader left. It runs until
 * SIGINT/SIGTERM.
 */
export function jobManagerCommand(
  program: Command,
  io: CommandIO,
  exit: (code: number) => void,
): void {
  withConfigurationOptions(
    program
      .command("jobmanager")
      .description(
        "start a job manager of a session cluster; task managers register with it and `sluice run` submits jobs to it",
      ),
  ).action(async (flags: ConfigurationFlags) => exit(await runJobManager(flags, io)));
}

async function runJobManager(flags: ConfigurationFlags, io: CommandIO): Promise<number> {
  const say = (line: string) => io.stdout.write(`${line}\n`);
  const warn = (message: string) => io.stderr.write(`warning: ${message}\n`);
  let jobManager: JobManager;
  let webMonitor: WebMonitorEndpoint;
  try {
    const { configuration } = await loadProcessConfiguration(flags);
    jobManager = await JobManager.start(configuration, {
      loader: DISTRIBUTION_LOADER,
      onTaskManagerRegistered: (taskManager) => {
        say(`${taskManager.labelWithAddress} registered`);
        for (const { reporter, url } of taskManager.metricEndpoints) {
          say(`${taskManager.label} metrics (${reporter}): ${url}`);
        }
      },
      onTaskManagerLost: (taskManager, cause) =>
        say(`${taskManager.labelWithAddress} lost: ${cause.message}`),
      onLeadershipGranted: (token) =>
        say(
          `elected leader (fencing token ${token}): task managers register with this job manager now`,
        ),
      onLeadershipRevoked: () => say("lost the leadership: standing by"),
      onTaskManagerWait: (wait, phase) => say(describeTaskManagerWait(wait, phase)),
      onWarning: warn,
    });
    const ha = configuration.get(HighAvailabilityOptions.HA_MODE);
    say(
      `job manager (pid ${process.pid}) at ${jobManager.url}, shuffle ${jobManager.plugin.reference}, high availability ${ha}${jobManager.fencingToken === undefined ? ": a standby, waiting to be elected leader" : ""}`,
    );
    for (const { reporter, url } of jobManager.deployer.metricGroup.registry.endpoints()) {
      say(`job manager metrics (${reporter}): ${url}`);
    }
    try {
      webMonitor = await WebMonitorEndpoint.start(jobManager, { onWarning: warn });
    } catch (error) {
      await jobManager.close({ reason: "its REST endpoint could not start" });
      throw error;
    }
    say(`REST endpoint and dashboard: ${webMonitor.url}`);
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
  let stopped!: () => void;
  const closed = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  return runUntilSignal(
    async () => {
      await closed;
      return ExitCode.OK;
    },
    async (signal) => {
      say(`stopping (${signal})`);
      await webMonitor.close();
      await jobManager.close({ reason: `the job manager was stopped by ${signal}` });
      stopped();
    },
    io,
  );
}
