import type { Command } from "commander";
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

interface SavepointFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
}

/**
 * `sluice savepoint <job id> [target directory]` (Flink's `flink savepoint`): triggers a savepoint
 * of a running job through the REST endpoint (`POST /jobs/:jobid/savepoints`), waits for it and
 * prints its folder; the job goes on. Without a target directory the savepoint goes to the job
 * manager's `state.savepoints.dir`.
 */
export function savepointCommand(
  program: Command,
  io: CommandIO,
  exit: (code: number) => void,
): void {
  withConfigurationOptions(
    program
      .command("savepoint")
      .description(
        "trigger a savepoint of a running job, wait for it and print its folder (the job goes on)",
      )
      .argument(
        "<job-id>",
        "the job's id (32 hex digits, as `sluice list` prints it)",
        jobIdArgument,
      )
      .argument(
        "[target-directory]",
        "the folder the savepoint's own folder is created in (default: the job manager's state.savepoints.dir)",
      )
      .addOption(restAddressOption()),
  ).action(async (jobId: string, target: string | undefined, flags: SavepointFlags) =>
    exit(await savepoint(jobId, target, flags, io)),
  );
}

async function savepoint(
  jobId: string,
  target: string | undefined,
  flags: SavepointFlags,
  io: CommandIO,
): Promise<number> {
  try {
    const configuration = loadClientConfiguration(flags);
    const location = await usingRestClient(configuration, flags.jobmanager, io.stderr, (client) => {
      io.stdout.write(`triggering a savepoint of job ${jobId}\n`);
      return triggerAndWaitForSavepoint(
        client,
        jobId,
        `/jobs/${jobId}/savepoints`,
        { "cancel-job": false, ...(target === undefined ? {} : { "target-directory": target }) },
        configuration,
      );
    });
    io.stdout.write(`savepoint completed: ${location}\n`);
    return ExitCode.OK;
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}
