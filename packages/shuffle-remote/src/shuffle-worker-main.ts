#!/usr/bin/env node
/**
 * The shuffle worker process: `sluice-shuffle-worker [-D key=value ...]`. Settings come from the
 * `-D` arguments and from the JSON in SLUICE_SHUFFLE_WORKER_CONFIG (what a ShuffleMaster passes
 * to the workers it starts). Prints one line with its address and incarnation once it serves,
 * and stops on SIGTERM, SIGINT, or when the process that forked it goes away.
 */
import { ConfigurationError } from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { WORKER_CONFIG_ENV } from "./embedded-shuffle-workers.js";
import { ShuffleWorker } from "./shuffle-worker.js";

function parseArgs(args: readonly string[]): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const pair = arg === "-D" ? args[++i] : arg.startsWith("-D") ? arg.slice(2) : undefined;
    const equals = pair?.indexOf("=") ?? -1;
    if (pair === undefined || equals <= 0) {
      throw new ConfigurationError(
        `sluice-shuffle-worker: expected -D key=value, got ${JSON.stringify(arg)}`,
      );
    }
    settings[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return settings;
}

const inherited = process.env[WORKER_CONFIG_ENV];
const configuration = readableConfigOf({
  ...(inherited === undefined ? {} : (JSON.parse(inherited) as Record<string, unknown>)),
  ...parseArgs(process.argv.slice(2)),
});
const worker = await ShuffleWorker.start(configuration);
const { host, rpcPort, dataPort, incarnation } = worker.address;
process.stdout.write(
  `shuffle worker (pid ${process.pid}) ready: rpc ${host}:${rpcPort}, data ${host}:${dataPort}, incarnation ${incarnation}\n`,
);
const stop = () => {
  void worker.close().then(() => process.exit(0));
};
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
process.once("disconnect", stop);
