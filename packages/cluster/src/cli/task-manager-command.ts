import path from "node:path";
import { type Command, Option } from "commander";
import { TaskManager } from "../task-manager.js";
import {
  type ConfigurationFlags,
  loadProcessConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { DISTRIBUTION_LOADER } from "./distribution.js";
import { parseHostAndPort } from "./host-and-port.js";
import {
  type CommandIO,
  ExitCode,
  exitCodeOf,
  formatError,
  runUntilSignal,
} from "./process-shell.js";

interface TaskManagerFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
  readonly usrlib: readonly string[];
}

/**
 * `sluice taskmanager` (Flink's `bin/taskmanager.sh`): a task manager of a session cluster. It
 * registers with the job manager (`--jobmanager`, else `jobmanager.rpc.address`/`port`, or the
 * leader under high availability) and runs the tasks of every job deployed to it; each job's
 * code is loaded from this host by the job module the job names (resolved from the `--usrlib`
 * folders, as Flink's `usrlib/`, then the working directory). It runs until SIGINT/SIGTERM, until
 * the job manager shuts it down, until it could not register again within
 * `taskmanager.registration.timeout` after losing the job manager, or until its TaskExecutor
 * fails fatally (exit 1).
 */
export function taskManagerCommand(
  program: Command,
  io: CommandIO,
  exit: (code: number) => void,
): void {
  withConfigurationOptions(
    program
      .command("taskmanager")
      .description(
        "start a task manager: it registers with the job manager and runs the tasks deployed to it",
      )
      .addOption(
        new Option(
          "-m, --jobmanager <host:port>",
          "the job manager's control plane (default: jobmanager.rpc.address and jobmanager.rpc.port, or the leader under high availability)",
        ),
      )
      .addOption(
        new Option(
          "--usrlib <folder>",
          "a folder the jobs' modules are resolved from, before the working directory (repeatable)",
        )
          .argParser((value: string, previous: string[]) => [...previous, value])
          .default([], "none"),
      ),
  ).action(async (flags: TaskManagerFlags) => exit(await runTaskManager(flags, io)));
}

async function runTaskManager(flags: TaskManagerFlags, io: CommandIO): Promise<number> {
  const say = (line: string) => io.stdout.write(`${line}\n`);
  let taskManager: TaskManager;
  try {
    const jobManager =
      flags.jobmanager === undefined
        ? undefined
        : parseHostAndPort(flags.jobmanager, "--jobmanager");
    const { configuration } = await loadProcessConfiguration(flags);
    taskManager = await TaskManager.start(configuration, {
      ...(jobManager === undefined ? {} : { jobManager }),
      loader: DISTRIBUTION_LOADER,
      userCodeLoader: { applicationDirs: flags.usrlib.map((folder) => path.resolve(folder)) },
      onWarning: (message) => io.stderr.write(`warning: ${message}\n`),
    });
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
  const { executor } = taskManager;
  say(
    `task manager ${taskManager.index} (pid ${process.pid}) registered with the job manager at ${taskManager.jobManagerAddress}: data port ${executor.location.host}:${executor.location.dataPort}, resource ${executor.resourceId}`,
  );
  for (const { reporter, url } of executor.metricGroup.registry.endpoints()) {
    say(`task manager ${taskManager.index} (pid ${process.pid}) metrics (${reporter}): ${url}`);
  }
  return runUntilSignal(
    async () => {
      const end = await taskManager.terminated;
      say(
        `task manager ${taskManager.index} (pid ${process.pid}) ended: ${end.reason} (${end.message})`,
      );
      // A fatal error may leave a task's code running: the caller exits the process.
      return end.reason === "job-manager-lost" || end.reason === "fatal-error"
        ? ExitCode.FAILED
        : ExitCode.OK;
    },
    async (signal) => {
      await taskManager.close(`stopped by ${signal}`);
    },
    io,
  );
}
