import { existsSync } from "node:fs";
import path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { TimeoutError } from "@sluice/core";
import type { Configuration } from "@sluice/runtime";
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
import { type RestClusterClient, usingRestClient } from "./rest-client.js";

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
/** How often it asks again while the job is not at the leader it follows. */
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
 * `--jobmanager`) it submits to the leader and follows the job to every next leader through one
 * leader retrieval, open for the whole run.
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
  try {
    const configuration = loadClientConfiguration(flags);
    return await usingRestClient(configuration, flags.jobmanager, io.stderr, (client) =>
      submitAndFollow(client, configuration, reference, args, flags, io),
    );
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
}

/**
 * Submits the job module's job through `client` and, unless detached, follows it to its end. A
 * client that follows the leader (high availability) sends every poll to the latest leader's
 * endpoint: after a failover the poll finds the job at the next leader, INITIALIZING while that
 * leader takes it over, without opening the high-availability services again.
 */
async function submitAndFollow(
  client: RestClusterClient,
  configuration: Configuration,
  reference: string,
  args: string[],
  flags: RunFlags,
  io: CommandIO,
): Promise<number> {
  const say = (line: string) => io.stdout.write(`${line}\n`);
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
  let at = client.url;
  // With high availability the job outlives its job manager: the next leader shows it as soon
  // as it listed the jobs it takes over. Until then, the job may be out of sight: no leader
  // (the lost one's lease has not expired), or one that still lists them.
  const followsLeader =
    flags.jobmanager === undefined && isHighAvailabilityModeActivated(configuration);
  const takeoverMs = configuration.get(JobManagerOptions.SLOT_REQUEST_TIMEOUT) + LEADER_WAIT_MS;
  let lostSince: number | undefined;
  for (;;) {
    if (client.url !== at) {
      at = client.url;
      say(`job ${jobid}: the leading job manager's REST endpoint is ${at} now`);
    }
    let job: JobDetailsInfo | undefined;
    let missing: string | undefined;
    try {
      job = await client.get<JobDetailsInfo>(`/jobs/${jobid}`);
      // A job the leader it follows suspended goes on under the next leader.
      if (followsLeader && job.state === "SUSPENDED") missing = "it is SUSPENDED there";
    } catch (error) {
      if (!followsLeader) throw error;
      missing = (error as Error).message;
    }
    if (missing !== undefined) {
      lostSince ??= Date.now();
      if (Date.now() - lostSince > takeoverMs) {
        throw new TimeoutError(
          `job ${jobid} was not seen at the leading job manager within ${takeoverMs} ms (${JobManagerOptions.SLOT_REQUEST_TIMEOUT.key} + ${LEADER_WAIT_MS / 1000} s): ${missing}`,
        );
      }
      if (state !== "lost") {
        state = "lost";
        say(
          `job ${jobid} is not at ${at} (${missing}): following the leader that high availability names`,
        );
      }
      await delay(LEADER_RETRY_MS);
      continue;
    }
    lostSince = undefined;
    const seen = job as JobDetailsInfo;
    if (seen.state !== state) {
      state = seen.state;
      say(`job ${jobid} is ${state}`);
    }
    if (TERMINAL.has(seen.state)) {
      say(`job ${jobid} ${seen.state} after ${seen.restarts} restart(s)`);
      if (seen.state === "FINISHED") return ExitCode.OK;
      const { "root-exception": cause } = await client.get<{
        "root-exception": string | null;
      }>(`/jobs/${jobid}/exceptions`);
      io.stderr.write(
        `error: job ${jobid} ended ${seen.state}${cause === null ? "" : `: ${cause}`}\n`,
      );
      return ExitCode.FAILED;
    }
    await delay(POLL_MS);
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
