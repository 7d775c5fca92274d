import { isSluiceError } from "@sluice/core";
import { describeThrowable } from "@sluice/runtime";
import { serializeThrowable } from "@sluice/runtime/plugin";

/** The exit codes of every `sluice` command. */
export const ExitCode = {
  /** Done: the job finished, or the process was stopped as asked. */
  OK: 0,
  /** The job failed or was canceled, or the process could not do its work. */
  FAILED: 1,
  /** A bad command line, configuration or plugin: nothing was started. */
  USAGE: 2,
  /** Stopped by Ctrl-C. */
  SIGINT: 130,
  /** Stopped by SIGTERM. */
  SIGTERM: 143,
} as const;

/** Where a command writes. */
export interface CommandIO {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
}

/**
 * The error codes that mean the user's input is wrong, not the run: a bad configuration, or a
 * plugin that cannot be found, loaded or used.
 */
const USAGE_ERROR_CODES: ReadonlySet<string> = new Set([
  "SLUICE_ERR_CONFIG",
  "SLUICE_ERR_PLUGIN_NOT_FOUND",
  "SLUICE_ERR_PLUGIN_EXPORT_MISSING",
  "SLUICE_ERR_PLUGIN_INVALID",
  "SLUICE_ERR_PLUGIN_INSTANTIATION",
  "SLUICE_ERR_PLUGIN_CONTRACT",
]);

/** The exit code for an error that ended a command: 2 for bad input, else 1. */
export function exitCodeOf(error: unknown): number {
  return isSluiceError(error) && USAGE_ERROR_CODES.has(error.code)
    ? ExitCode.USAGE
    : ExitCode.FAILED;
}

/** `error: [CODE] message`, with the causes Sluice's errors carry. */
export function formatError(error: unknown): string {
  return `error: ${describeThrowable(serializeThrowable(error))}\n`;
}

/** The exit code of a process stopped by `signal`. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return signal === "SIGINT" ? ExitCode.SIGINT : ExitCode.SIGTERM;
}

/**
 * Runs a long-lived process (a job manager, a task manager, a shuffle worker): the first SIGINT or
 * SIGTERM calls `stop`, which closes it gracefully; a second one ends the process at once (a
 * close that hangs is never waited for twice). Resolves with what `run` resolves, or the signal's
 * exit code once `stop` returned.
 */
export async function runUntilSignal(
  run: () => Promise<number>,
  stop: (signal: NodeJS.Signals) => Promise<void>,
  io: CommandIO,
): Promise<number> {
  let stopping: Promise<number> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping !== undefined) {
      io.stderr.write(`${signal} again: exiting without waiting for the graceful stop\n`);
      process.exit(signalExitCode(signal));
    }
    stopping = stop(signal).then(
      () => signalExitCode(signal),
      (error: unknown) => {
        io.stderr.write(formatError(error));
        return ExitCode.FAILED;
      },
    );
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);
  try {
    const code = await run();
    return stopping === undefined ? code : await stopping;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
  }
}
