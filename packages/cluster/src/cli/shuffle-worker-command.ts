import { ConfigurationError } from "@sluice/core";
import { type Configuration, knownOptionsWith } from "@sluice/runtime";
import type { HighAvailabilityServices, LeaderRetrievalService } from "@sluice/runtime-api";
import {
  RemoteShuffleOptions,
  type ShuffleManagerAddress,
  ShuffleWorker,
} from "@sluice/shuffle-remote";
import { type Command, Option } from "commander";
import {
  isHighAvailabilityModeActivated,
  loadHighAvailabilityServices,
} from "../high-availability-services-loader.js";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
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

interface ShuffleWorkerFlags extends ConfigurationFlags {
  readonly jobmanager?: string;
}

/**
 * `sluice shuffleworker`: a shuffle worker of `@sluice/shuffle-remote` (the remote shuffle's
 * storage, Celeborn's worker), which registers with the shuffle manager inside the job manager
 * (`remote-shuffle.manager.rpc-port`) and stores the partitions pushed to it until SIGINT/SIGTERM.
 * With high availability (and no `--jobmanager`) it registers with the leading job manager's
 * manager, as etcd names it, and follows every next leader.
 */
export function shuffleWorkerCommand(
  program: Command,
  io: CommandIO,
  exit: (code: number) => void,
): void {
  withConfigurationOptions(
    program
      .command("shuffleworker")
      .description(
        "start a shuffle worker of the remote shuffle: it registers with the job manager's shuffle manager and stores partitions",
      )
      .addOption(
        new Option(
          "-m, --jobmanager <host[:port]>",
          `the job manager's shuffle manager (default: with high availability the leader's, else ${RemoteShuffleOptions.MANAGER_ADDRESS.key} and ${RemoteShuffleOptions.MANAGER_PORT.key})`,
        ),
      ),
  ).action(async (flags: ShuffleWorkerFlags) => exit(await runShuffleWorker(flags, io)));
}

async function runShuffleWorker(flags: ShuffleWorkerFlags, io: CommandIO): Promise<number> {
  let worker: ShuffleWorker;
  let leaderRetrieval: LeadingShuffleManager | undefined;
  let failed!: (error: Error) => void;
  const failure = new Promise<never>((_, reject) => {
    failed = reject;
  });
  failure.catch(() => undefined);
  try {
    const configuration = loadClientConfiguration(flags, false);
    if (flags.jobmanager !== undefined) {
      const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(flags.jobmanager.trim());
      if (match === null) {
        throw new ConfigurationError(
          `--jobmanager expects host or host:port, got ${JSON.stringify(flags.jobmanager)}`,
        );
      }
      configuration.set(RemoteShuffleOptions.MANAGER_ADDRESS.key, match[1] ?? match[2]);
      if (match[3] !== undefined) {
        configuration.set(RemoteShuffleOptions.MANAGER_PORT.key, Number(match[3]));
      }
    }
    const known = knownOptionsWith(Object.values(RemoteShuffleOptions));
    configuration.warnUnknownKeys(known);
    configuration.validate(known);
    // With high availability the manager is the leading job manager's, as etcd names it.
    const followsLeader =
      flags.jobmanager === undefined && isHighAvailabilityModeActivated(configuration);
    worker = await ShuffleWorker.start(configuration, { awaitManager: followsLeader });
    if (followsLeader) {
      try {
        leaderRetrieval = await LeadingShuffleManager.follow(configuration, worker, io, failed);
      } catch (error) {
        await worker.close();
        throw error;
      }
    }
  } catch (error) {
    io.stderr.write(formatError(error));
    return exitCodeOf(error);
  }
  const { host, rpcPort, dataPort, incarnation } = worker.address;
  io.stdout.write(
    `shuffle worker (pid ${process.pid}) ready: rpc ${host}:${rpcPort}, data ${host}:${dataPort}, incarnation ${incarnation}\n`,
  );
  let stopped!: () => void;
  const closed = new Promise<void>((resolve) => {
    stopped = resolve;
  });
  const stop = async () => {
    await leaderRetrieval?.stop();
    await worker.close();
  };
  return runUntilSignal(
    async () => {
      try {
        await Promise.race([closed, failure]);
        return ExitCode.OK;
      } catch (error) {
        // Leader retrieval failed for good: a worker that cannot follow the leader must not
        // keep serving the manager it knew.
        io.stderr.write(formatError(error));
        await stop();
        return exitCodeOf(error);
      }
    },
    async () => {
      await stop();
      stopped();
    },
    io,
  );
}

/**
 * Leader retrieval for a worker under high availability: the leading job manager publishes its
 * shuffle manager's address (`ShuffleMaster.getAdvertisedAddress`), and the worker registers
 * with that manager, leaving the previous leader's at every change of leader.
 */
class LeadingShuffleManager {
  private constructor(
    private readonly services: HighAvailabilityServices,
    private readonly retriever: LeaderRetrievalService,
  ) {}

  /**
   * Starts following.
   *
   * @throws the high-availability services' errors (a plugin that cannot be loaded, etcd that
   *   cannot be reached).
   */
  static async follow(
    configuration: Configuration,
    worker: ShuffleWorker,
    io: CommandIO,
    onError: (error: Error) => void,
  ): Promise<LeadingShuffleManager> {
    const warn = (message: string) => io.stderr.write(`warning: ${message}\n`);
    const services = await loadHighAvailabilityServices(
      configuration,
      { onWarning: warn },
      DISTRIBUTION_LOADER,
    );
    const retriever = services.getJobManagerLeaderRetriever();
    let followed: string | undefined;
    try {
      await retriever.start({
        notifyLeaderAddress: (leader) => {
          const published = leader?.shuffleMasterAddress;
          let address: ShuffleManagerAddress | undefined;
          try {
            address =
              published === undefined
                ? undefined
                : parseHostAndPort(published, "the leader's shuffle manager address");
          } catch (error) {
            warn(`${(error as Error).message}: waiting for the next leader`);
          }
          worker.followManager(address);
          const now = address === undefined ? undefined : published;
          if (now === followed) return;
          followed = now;
          io.stdout.write(
            now === undefined
              ? "no leading job manager publishes a shuffle manager: waiting for one\n"
              : `registering with the leading job manager's shuffle manager at ${now}\n`,
          );
        },
        handleError: onError,
      });
    } catch (error) {
      await services.close();
      throw error;
    }
    return new LeadingShuffleManager(services, retriever);
  }

  /** Stops following. */
  async stop(): Promise<void> {
    await this.retriever.stop();
    await this.services.close();
  }
}
