#!/usr/bin/env node
/**
 * The shuffle worker process: `sluice-shuffle-worker [-D key=value ...]`. Settings come from the
 * `-D` arguments and from the JSON in SLUICE_SHUFFLE_WORKER_CONFIG (what a ShuffleMaster passes
 * to the workers it starts). Prints one line with its address and incarnation once it serves,
 * and stops on SIGTERM, SIGINT, or when the process that forked it goes away. `--help` prints
 * the usage; arguments or settings it cannot use end it with exit code 2 and one line saying why.
 */
import { ErrorCodes, isSluiceError } from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { WORKER_CONFIG_ENV } from "./embedded-shuffle-workers.js";
import { ShuffleWorker } from "./shuffle-worker.js";

const USAGE = `Usage: sluice-shuffle-worker [-D key=value ...]

Starts a shuffle worker of @sluice/shuffle-remote: it registers with the shuffle manager that
the job manager's ShuffleMaster runs, stores the BLOCKING partitions producers push to it, and
serves them to their consumers.

  -D key=value   a setting (also -Dkey=value); repeat for more. The main ones:
                   remote-shuffle.manager.rpc-address / rpc-port   the shuffle manager
                   remote-shuffle.worker.host                      this worker's address
                   remote-shuffle.worker.rpc-port / data-port      its ports (0: any free port)
                   remote-shuffle.worker.memory.writing-size       sort buffers for pushes
                   io.tmp.dirs                                     where partitions are stored
                   security.ssl.internal.*                         mutual TLS on every port
                 Every key: docs/configuration.md, section "Plugin @sluice/shuffle-remote".
  -h, --help     prints this and exits

Settings may also come as a JSON object in the environment variable ${WORKER_CONFIG_ENV};
-D arguments win. Exit codes: 0 after SIGTERM or SIGINT, 2 for arguments or settings it cannot
use, 1 when it fails later.
`;

/** An argument or setting the worker cannot use: exit code 2. */
class UsageError extends Error {}

function parseArgs(args: readonly string[]): Record<string, unknown> {
  const settings: Record<string, unknown> = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const pair = arg === "-D" ? args[++i] : arg.startsWith("-D") ? arg.slice(2) : undefined;
    const equals = pair?.indexOf("=") ?? -1;
    if (pair === undefined || equals <= 0) {
      throw new UsageError(
        arg === "-D"
          ? "-D needs a key=value after it"
          : `expected -D key=value or --help, got ${JSON.stringify(arg)}`,
      );
    }
    settings[pair.slice(0, equals)] = pair.slice(equals + 1);
  }
  return settings;
}

function inheritedSettings(): Record<string, unknown> {
  const inherited = process.env[WORKER_CONFIG_ENV];
  if (inherited === undefined) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(inherited);
  } catch (error) {
    throw new UsageError(`${WORKER_CONFIG_ENV} is not JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new UsageError(`${WORKER_CONFIG_ENV} must hold a JSON object of settings`);
  }
  return parsed as Record<string, unknown>;
}

function fail(message: string, code: number): never {
  process.stderr.write(`sluice-shuffle-worker: ${message}\n`);
  if (code === 2) process.stderr.write("Run sluice-shuffle-worker --help for the usage.\n");
  process.exit(code);
}

const args = process.argv.slice(2);
if (args.includes("--help") || args.includes("-h")) {
  process.stdout.write(USAGE);
  process.exit(0);
}

let worker: ShuffleWorker;
try {
  const configuration = readableConfigOf({ ...inheritedSettings(), ...parseArgs(args) });
  worker = await ShuffleWorker.start(configuration);
} catch (error) {
  const settingsError =
    error instanceof UsageError || (isSluiceError(error) && error.code === ErrorCodes.CONFIG);
  fail((error as Error).message, settingsError ? 2 : 1);
}
const { host, rpcPort, dataPort, incarnation } = worker.address;
process.stdout.write(
  `shuffle worker (pid ${process.pid}) ready: rpc ${host}:${rpcPort}, data ${host}:${dataPort}, incarnation ${incarnation}\n`,
);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void worker.close().then(() => process.exit(0));
};
// `on`, not `once`: a listener that stays tells other libraries' signal handlers that this
// process handles the signal, so none of them ends it by the signal while it closes.
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.once("disconnect", stop);
