import { Configuration, knownOptionsWith } from "@sluice/runtime";
import { RemoteShuffleOptions, ShuffleWorker } from "@sluice/shuffle-remote";
import type { ShuffleWorkerCommand } from "./cli.js";
import { isUsageError } from "./demo-application.js";

/**
 * The demo's shuffle worker role (`main.js shuffleworker --jobmanager host[:port]`): a
 * `ShuffleWorker` of @sluice/shuffle-remote that registers with the shuffle manager of the job
 * manager's ShuffleMaster and stores the partitions pushed to it, until Ctrl-C / SIGTERM (exit 0).
 * Resolves with the exit code: 2 for a bad configuration, 1 when the worker cannot start.
 */
export async function runShuffleWorker(
  command: ShuffleWorkerCommand,
  io: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream },
): Promise<number> {
  let worker: ShuffleWorker;
  try {
    const configuration = Configuration.load({
      ...(command.configFile === undefined ? {} : { configFile: command.configFile }),
      args: command.dynamicProperties,
      warnUnknownKeys: false,
    });
    if (command.jobManager !== undefined) {
      configuration.set(RemoteShuffleOptions.MANAGER_ADDRESS.key, command.jobManager.host);
      if (command.jobManager.port !== undefined) {
        configuration.set(RemoteShuffleOptions.MANAGER_PORT.key, command.jobManager.port);
      }
    }
    const known = knownOptionsWith(Object.values(RemoteShuffleOptions));
    configuration.warnUnknownKeys(known);
    configuration.validate(known);
    worker = await ShuffleWorker.start(configuration);
  } catch (error) {
    const code = (error as { code?: string }).code;
    io.stderr.write(
      `error: ${code === undefined ? "" : `[${code}] `}${(error as Error).message}\n`,
    );
    return isUsageError(error) ? 2 : 1;
  }
  const { host, rpcPort, dataPort, incarnation } = worker.address;
  if (!command.quiet) {
    io.stdout.write(
      `shuffle worker (pid ${process.pid}) ready: rpc ${host}:${rpcPort}, data ${host}:${dataPort}, incarnation ${incarnation}\n`,
    );
  }
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  await worker.close();
  if (!command.quiet) io.stdout.write(`shuffle worker (pid ${process.pid}) stopped by ${signal}\n`);
  return 0;
}
