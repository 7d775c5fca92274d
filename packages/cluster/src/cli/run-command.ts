import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { JobGraphCodec, loadJobModule } from "@sluice/runtime/plugin";
import { JobManagerOptions } from "@sluice/runtime-api";
import { type Command, Option } from "commander";
import { isHighAvailabilityModeActivated } from "../high-availability-services-loader.js";
import type { JobDetailsInfo } from "../rest/job-details-info.js";
import type { JobSubmitResponseBody } from "../rest/job-submit-handler.js";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
import { restAddressOption } from "./list-command.js";
import { type CommandIO, ExitCode, exitCodeOf, formatError } from "./process-shell.js";
import { RestClusterClient } from "./rest-client.js";

interface RunFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
  readonly detached?: boolean;
  readonly code?: string;
}

/**
 * How often `sluice run` asks for the job's state while it waits for its end: it reports the end
 * (and exits) at most this long after it. A request reads the job manager's state, and its
 * metrics only once `metrics.fetcher.update-interval` passed, so asking often costs little.
 */
const POLL_MS = 100;
/** How often it looks the leader up again while the job is not at the one it follows. */
const LEADER_RETRY_MS = 1000;
/** Beyond `slot.request.timeout`, how long a job may be out of sight during a takeover. */
const LEADER_WAIT_MS = 30_000;

/** The states a job ends in for good. */
const TERMINAL = new Set(["FINISHED", "FAILED", "CANCELED"]);

/**
 * `sluice run <job-module> [args...]` (Flink's `flink run`): loads the job module here (a path, a
 * `file:` URL or a package name, `#export` for a named export), builds its job graph from the
 * arguments after the module, names the module the task managers load its code by, submits the
 * graph to the job manager's REST endpoint and, unless `--detached`, follows the job to its end:
 * exit code 0 when it finished, 1 when it failed or was canceled. With high availability (and no
 * `--jobmanager`) it submits to the leader and follows the job to every next leader.
 */
export function runCommand(program: Command, io: CommandIO, exit: (code: number) => void): void {
  withConfigurationOptions(
    program
      .command("run")
      .description(
        "submit a job module's job to a running cluster and follow it to its end (the arguments after the module go to the job)",
      )
      .argument(
        "<job-module>",
        "the job module: a path, file: URL or package name, #export for a named export",
      )
      .argument("[args...]", "the job's own arguments (createJobGraph's args)")
      .addOption(restAddressOption())
      .addOption(new Option("-d, --detached", "return once the job was submitted"))
      .addOption(
        new Option(
          "--code <module#export>",
          "how the task managers load the job's code (default: the module's absolute path here, for task managers on this host or with the same files; a package name or a path relative to their --usrlib folders otherwise)",
        ),
      )
      .passThroughOptions(),
  ).action(async (module: string, args: string[], flags: RunFlags) =>
    exit(await run(module, args, flags, io)),
  );
}

async function run(
  reference: string,
  args: string[],
  flags: RunFlags,
  io: CommandIO,
): Promise<number> {
  const say = (line: string) => io.stdout.write(`${line}\n`);
  try {
    const configuration = loadClientConfiguration(flags);
    const client = await RestClusterClient.of(configuration, flags.jobmanager, io.stderr);
    const loaded = await loadJobModule(asPathIfFile(reference));
    const graph = await loaded.module.createJobGraph({ args, configuration });
    if (flags.code !== undefined) graph.setUserCodeModule(flags.code);
    else if (graph.userCodeModule === undefined) {
      graph.setUserCodeModule(`${loaded.file}#${loaded.exportName}`);
    }
    const { jobid } = await client.request<JobSubmitResponseBody>("POST", "/jobs", {
      jobGraph: JobGraphCodec.toJSON(graph) as never,
    });
    say(
      `job ${jobid} (${graph.name}) submitted to ${client.url}; task managers run it with ${graph.userCodeModule}`,
    );
    if (flags.detached === true) return ExitCode.OK;
    let state: string | undefined;
    let following = client;
    // With high availability the job outlives its job manager: the next leader shows it once it
    // took it over, which waits at most slot.request.timeout for the job's task managers.
    const followsLeader =
      flags.jobmanager === undefined && isHighAvailabilityModeActivated(configuration);
    const takeoverMs = configuration.get(JobManagerOptions.SLOT_REQUEST_TIMEOUT) + LEADER_WAIT_MS;
    let lostSince: number | undefined;
    for (;;) {
      let job: JobDetailsInfo;
      try {
        job = await following.get<JobDetailsInfo>(`/jobs/${jobid}`);
        lostSince = undefined;
      } catch (error) {
        if (!followsLeader || Date.now() - (lostSince ?? Date.now()) > takeoverMs) throw error;
        if (lostSince === undefined) {
          lostSince = Date.now();
          say(
            `job ${jobid} is not at ${following.url} (${(error as Error).message}): following the leader that high availability names`,
          );
        }
        await delay(LEADER_RETRY_MS);
        // No leader within leader retrieval's own timeout is one more miss within the budget.
        following = await RestClusterClient.of(configuration, undefined, io.stderr).catch(
          () => following,
        );
        continue;
      }
      if (job.state !== state) {
        state = job.state;
        say(`job ${jobid} is ${state}`);
      }
      if (TERMINAL.has(job.state)) {
        say(`job ${jobid} ${job.state} after ${job.restarts} restart(s)`);
        if (job.state === "FINISHED") return ExitCode.OK;
        const { "root-exception": cause } = await following.get<{
          "root-exception": string | null;
        }>(`/jobs/${jobid}/exceptions`);
        io.stderr.write(
          `error: job ${jobid} ended ${job.state}${cause === null ? "" : `: ${cause}`}\n`,
        );
        return ExitCode.FAILED;
      }
      await delay(POLL_MS);
    }
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}

/**
 * `dist/job.js` names a file here when one exists (a module reference would read it as a
 * package name): the absolute path, `#export` kept. Anything else is left to the loader.
 */
function asPathIfFile(reference: string): string {
  const hash = reference.lastIndexOf("#");
  const specifier = hash < 0 ? reference : reference.slice(0, hash);
  const file = path.resolve(specifier);
  if (specifier.startsWith(".") || path.isAbsolute(specifier) || !existsSync(file)) {
    return reference;
  }
  return hash < 0 ? file : `${file}${reference.slice(hash)}`;
}
