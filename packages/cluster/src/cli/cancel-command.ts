import { setTimeout as delay } from "node:timers/promises";
import { IllegalStateError, TimeoutError } from "@sluice/core";
import { type Command, InvalidArgumentError, Option } from "commander";
import type { JobOverviewInfo } from "../rest/job-details-info.js";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { restAddressOption } from "./list-command.js";
import { type CommandIO, ExitCode, exitCodeOf, formatError } from "./process-shell.js";
import { type RestClusterClient, usingRestClient } from "./rest-client.js";

interface CancelFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
  readonly detached?: boolean;
}

/** How often `sluice cancel` asks whether the job has ended. */
const POLL_MS = 200;
/** How long `sluice cancel` waits for the job's end before it gives up (it keeps cancelling). */
const WAIT_MS = 120_000;

/**
 * `sluice cancel <job id>` (Flink's `flink cancel`): cancels a running job and waits until it is
 * CANCELED (or ended otherwise); `--detached` returns once the cancellation was accepted.
 */
export function cancelCommand(program: Command, io: CommandIO, exit: (code: number) => void): void {
  withConfigurationOptions(
    program
      .command("cancel")
      .description("cancel a running job and wait until it has ended")
      .argument(
        "<job-id>",
        "the job's id (32 hex digits, as `sluice list` prints it)",
        jobIdArgument,
      )
      .addOption(restAddressOption())
      .addOption(new Option("-d, --detached", "return once the cancellation was accepted")),
  ).action(async (jobId: string, flags: CancelFlags) => exit(await cancel(jobId, flags, io)));
}

async function cancel(jobId: string, flags: CancelFlags, io: CommandIO): Promise<number> {
  try {
    return await usingRestClient(
      loadClientConfiguration(flags),
      flags.jobmanager,
      io.stderr,
      (client) => cancelAndWait(client, jobId, flags, io),
    );
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}

/** Cancels job `jobId` through `client` and, unless detached, waits until it ended. */
async function cancelAndWait(
  client: RestClusterClient,
  jobId: string,
  flags: CancelFlags,
  io: CommandIO,
): Promise<number> {
  await client.request("PATCH", `/jobs/${jobId}?mode=cancel`);
  io.stdout.write(`cancelling job ${jobId}\n`);
  if (flags.detached === true) return ExitCode.OK;
  const deadline = performance.now() + WAIT_MS;
  for (;;) {
    const { jobs } = await client.get<{ jobs: JobOverviewInfo[] }>("/jobs/overview");
    const state = jobs.find((job) => job.jid === jobId)?.state;
    if (state === undefined) {
      throw new IllegalStateError(`job ${jobId} is no longer listed by ${client.url}`);
    }
    if (state === "CANCELED" || state === "FINISHED" || state === "FAILED") {
      io.stdout.write(`job ${jobId} ended ${state}\n`);
      return state === "CANCELED" ? ExitCode.OK : ExitCode.FAILED;
    }
    if (performance.now() > deadline) {
      throw new TimeoutError(
        `job ${jobId} is still ${state} ${WAIT_MS / 1000} s after its cancellation was accepted (its tasks may ignore their cancellation; see task.cancellation.timeout)`,
      );
    }
    await delay(POLL_MS);
  }
}

/** Checks a job id argument (commander reports the message as a usage error, exit code 2). */
export function jobIdArgument(value: string): string {
  if (!/^[0-9a-f]{32}$/.test(value)) {
    throw new InvalidArgumentError(`a job id is 32 hex digits, got ${JSON.stringify(value)}`);
  }
  return value;
}
