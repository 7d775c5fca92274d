#!/usr/bin/env node
/**
 * The Sluice demo: `node apps/demo/dist/main.js [options]` runs the whole word count on this host
 * (a job manager in this process and task-manager child processes); `main.js jobmanager ...` and
 * `main.js taskmanager --jobmanager <host:port> ...` run the two roles of a standalone cluster on
 * separate hosts, and `main.js shuffleworker --jobmanager <host>` a shuffle worker of the remote
 * shuffle. The word `taskmanager` in a worker's command line makes it recognisable in `ps`.
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { HELP_TEXT, parseCli, UsageError } from "./cli.js";
import { JobManagerFailoverLauncher } from "./job-manager-failover-launcher.js";
import { type DemoIO, JobManagerRole } from "./job-manager-role.js";
import { runShuffleWorker } from "./shuffle-worker-role.js";
import { runTaskManager } from "./task-manager-role.js";

/**
 * Runs the demo with command-line arguments `argv` and resolves with the exit code: 0 verified
 * (or, for a task manager, the job finished), 1 the job failed or the counts differ, 2 a bad
 * command line or configuration.
 */
export async function runDemo(argv: readonly string[], io?: Partial<DemoIO>): Promise<number> {
  const stdout = io?.stdout ?? process.stdout;
  const stderr = io?.stderr ?? process.stderr;
  let command: ReturnType<typeof parseCli>;
  try {
    // `pnpm demo -- --records 5` may pass the separator through.
    command = parseCli(argv[0] === "--" ? argv.slice(1) : argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    stderr.write(`error: ${error.message}\nRun with --help for the options.\n`);
    return error.exitCode;
  }
  if (command.help) {
    stdout.write(HELP_TEXT);
    return 0;
  }
  if (command.command === "taskmanager") return runTaskManager(command, { stdout, stderr });
  if (command.command === "shuffleworker") return runShuffleWorker(command, { stdout, stderr });
  const human = io?.human ?? (command.json ? stderr : stdout);
  if (command.command === "local" && command.jobManagers !== undefined) {
    return new JobManagerFailoverLauncher(command, argv, { stdout, stderr, human }).run();
  }
  return new JobManagerRole(command, { stdout, stderr, human }).run();
}

function isEntryPoint(): boolean {
  const entry = process.argv[1];
  if (entry === undefined) return false;
  try {
    return realpathSync(entry) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    // argv[1] names no file (node -e, a REPL): this module was imported, not run.
    return false;
  }
}

if (isEntryPoint()) {
  runDemo(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`error: ${(error as Error)?.stack ?? String(error)}\n`);
      process.exit(1);
    },
  );
}
