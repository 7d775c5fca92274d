import { type Command, Option } from "commander";
import type { JobOverviewInfo } from "../rest/job-details-info.js";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { type CommandIO, ExitCode, exitCodeOf, formatError } from "./process-shell.js";
import { type RestClusterClient, usingRestClient } from "./rest-client.js";

/** The `--jobmanager` option of the REST commands. */
export function restAddressOption(): Option {
  return new Option(
    "-m, --jobmanager <host:port>",
    "the job manager's REST endpoint (default: with high availability the leader's, as etcd names it; else rest.address, else jobmanager.rpc.address, and rest.port)",
  );
}

interface ListFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
  readonly json?: boolean;
}

/** `sluice list` (Flink's `flink list`): the jobs of a running cluster, newest first. */
export function listCommand(program: Command, io: CommandIO, exit: (code: number) => void): void {
  withConfigurationOptions(
    program
      .command("list")
      .description("list the jobs of a running cluster: id, state, name, start and duration")
      .addOption(restAddressOption())
      .addOption(new Option("--json", "print the REST endpoint's answer as JSON")),
  ).action(async (flags: ListFlags) => exit(await list(flags, io)));
}

async function list(flags: ListFlags, io: CommandIO): Promise<number> {
  try {
    return await usingRestClient(
      loadClientConfiguration(flags),
      flags.jobmanager,
      io.stderr,
      (client) => printJobs(client, flags, io),
    );
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}

/** Prints the jobs `client`'s endpoint lists, newest first (or its answer as JSON). */
async function printJobs(
  client: RestClusterClient,
  flags: ListFlags,
  io: CommandIO,
): Promise<number> {
  const { jobs } = await client.get<{ jobs: JobOverviewInfo[] }>("/jobs/overview");
  if (flags.json === true) {
    io.stdout.write(`${JSON.stringify({ jobs })}\n`);
    return ExitCode.OK;
  }
  if (jobs.length === 0) {
    io.stdout.write(`no jobs at ${client.url}\n`);
    return ExitCode.OK;
  }
  const rows = [...jobs]
    .sort((a, b) => b["start-time"] - a["start-time"])
    .map((job) => [
      job.jid,
      job.state,
      new Date(job["start-time"]).toISOString(),
      `${(job.duration / 1000).toFixed(1)} s`,
      job.name,
    ]);
  const header = ["JOB ID", "STATE", "STARTED", "DURATION", "NAME"];
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => (row[column] as string).length)),
  );
  for (const row of [header, ...rows]) {
    io.stdout.write(
      `${row
        .map((cell, column) => cell.padEnd(widths[column] as number))
        .join("  ")
        .trimEnd()}\n`,
    );
  }
  return ExitCode.OK;
}
