import { type Command, Option } from "commander";
import { jobIdArgument } from "./cancel-command.js";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { restAddressOption } from "./list-command.js";
import { type CommandIO, ExitCode, exitCodeOf, formatError } from "./process-shell.js";
import { usingRestClient } from "./rest-client.js";
import { triggerAndWaitForSavepoint } from "./savepoint-trigger-poller.js";

interface StopFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
  readonly savepointPath?: string;
  readonly drain?: boolean;
}

/**
 * `sluice stop [--savepointPath <dir>] [--drain] <job id>` (Flink's `flink stop`): stops a running
 * job with a savepoint through the REST endpoint (`POST /jobs/:jobid/stop`): its sources stop,
 * the savepoint is taken, and the job ends FINISHED; it prints the savepoint's folder. Without
 * `--drain` no task emits what it would at the end of its input (it stays in the savepoint);
 * with it, every task does (Flink's `--drain`, for a job that will not be resumed).
 */
export function stopCommand(program: Command, io: CommandIO, exit: (code: number) => void): void {
  withConfigurationOptions(
    program
      .command("stop")
      .description(
        "stop a running job with a savepoint (it ends FINISHED) and print the savepoint's folder",
      )
      .argument(
        "<job-id>",
        "the job's id (32 hex digits, as `sluice list` prints it)",
        jobIdArgument,
      )
      .addOption(
        new Option(
          "-p, --savepointPath <dir>",
          "the folder the savepoint's own folder is created in (default: the job manager's state.savepoints.dir)",
        ),
      )
      .addOption(
        new Option(
          "-d, --drain",
          "end every task's input (EndOfData DRAIN) before the savepoint, so each emits its end-of-input results",
        ),
      )
      .addOption(restAddressOption()),
  ).action(async (jobId: string, flags: StopFlags) => exit(await stop(jobId, flags, io)));
}

async function stop(jobId: string, flags: StopFlags, io: CommandIO): Promise<number> {
  try {
    const configuration = loadClientConfiguration(flags);
    const drain = flags.drain === true;
    const location = await usingRestClient(configuration, flags.jobmanager, io.stderr, (client) => {
      io.stdout.write(`stopping job ${jobId} with a savepoint${drain ? " (drain)" : ""}\n`);
      return triggerAndWaitForSavepoint(
        client,
        jobId,
        `/jobs/${jobId}/stop`,
        {
          drain,
          ...(flags.savepointPath === undefined ? {} : { targetDirectory: flags.savepointPath }),
        },
        configuration,
      );
    });
    io.stdout.write(`savepoint completed: ${location}\njob ${jobId} stopped\n`);
    return ExitCode.OK;
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}
