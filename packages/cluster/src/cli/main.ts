#!/usr/bin/env node
/**
 * The `sluice` command (Flink's `bin/` scripts and `flink` CLI in one): `sluice jobmanager`,
 * `sluice taskmanager` and `sluice shuffleworker` start the processes of a session cluster;
 * `sluice run`, `sluice list`, `sluice cancel`, `sluice savepoint` and `sluice stop` talk to a
 * running one. `sluice <command> --help` describes each.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Command, CommanderError } from "commander";
import { SLUICE_VERSION } from "../control-plane-messages.js";
import { cancelCommand } from "./cancel-command.js";
import { jobManagerCommand } from "./job-manager-command.js";
import { listCommand } from "./list-command.js";
import { type CommandIO, ExitCode, formatError } from "./process-shell.js";
import { runCommand } from "./run-command.js";
import { savepointCommand } from "./savepoint-command.js";
import { shuffleWorkerCommand } from "./shuffle-worker-command.js";
import { stopCommand } from "./stop-command.js";
import { taskManagerCommand } from "./task-manager-command.js";

/**
 * Runs `sluice` with `argv` (the arguments after the command's name) and resolves with the exit
 * code: 0 done, 1 failed, 2 a bad command line, configuration or plugin, 130/143 stopped by
 * SIGINT/SIGTERM.
 */
export async function runSluice(
  argv: readonly string[],
  io: CommandIO = { stdout: process.stdout, stderr: process.stderr },
): Promise<number> {
  let code: number | undefined;
  const exit = (value: number) => {
    code = value;
  };
  const program = new Command("sluice")
    .description(
      "Sluice: Apache Flink's network stack and runtime for Node.js. Start the processes of a cluster, and submit, list and cancel its jobs.",
    )
    .version(SLUICE_VERSION, "-V, --version")
    .showHelpAfterError("(run with --help for the options)")
    .enablePositionalOptions()
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
    });
  jobManagerCommand(program, io, exit);
  taskManagerCommand(program, io, exit);
  shuffleWorkerCommand(program, io, exit);
  runCommand(program, io, exit);
  listCommand(program, io, exit);
  cancelCommand(program, io, exit);
  savepointCommand(program, io, exit);
  stopCommand(program, io, exit);
  for (const command of program.commands) command.exitOverride();
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here too, with exit code 0.
      return error.exitCode === 0 ? ExitCode.OK : ExitCode.USAGE;
    }
    io.stderr.write(formatError(error));
    return ExitCode.FAILED;
  }
  if (code === undefined) {
    program.outputHelp();
    return ExitCode.USAGE;
  }
  return code;
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  runSluice(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(formatError(error));
      process.exit(ExitCode.FAILED);
    },
  );
}
