import { ConfigurationError } from "@sluice/core";
import { knownOptionsWith } from "@sluice/runtime";
import { RemoteShuffleOptions, ShuffleWorker } from "@sluice/shuffle-remote";
import { type Command, Option } from "commander";
import {
  type ConfigurationFlags,
  loadClientConfiguration,
  withConfigurationOptions,
} from "./configuration-options.js";
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
          `the job manager's shuffle manager (default: ${RemoteShuffleOptions.MANAGER_ADDRESS.key} and ${RemoteShuffleOptions.MANAGER_PORT.key})`,
        ),
      ),
  ).action(async (flags: ShuffleWorkerFlags) => exit(await runShuffleWorker(flags, io)));
}

async function runShuffleWorker(flags: ShuffleWorkerFlags, io: CommandIO): Promise<number> {
  let worker: ShuffleWorker;
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
    worker = await ShuffleWorker.start(configuration);
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
  return runUntilSignal(
    async () => {
      await closed;
      return ExitCode.OK;
    },
    async () => {
      await worker.close();
      stopped();
    },
    io,
  );
}
