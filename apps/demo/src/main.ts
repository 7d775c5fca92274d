#!/usr/bin/env node
/**
 * The Sluice demo: `node apps/demo/dist/main.js [options]` runs the word count's job module on a
 * cluster it starts on this host (or on a session cluster, `--jobmanager`), follows it and
 * verifies its counts. `main.js jobmanager|taskmanager|shuffleworker ...` run the `sluice`
 * commands of the same name (a task manager loading the job module from this folder).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { runSluice } from "@sluice/cluster";
import { HELP_TEXT, parseCli, UsageError } from "./cli.js";
import { type DemoIO, runWordCount } from "./demo-run.js";
import { JOB_MODULE_DIR } from "./word-count-cluster.js";

/** The `sluice` commands the demo runs under its own name (the processes of a cluster). */
const SLUICE_COMMANDS: ReadonlySet<string> = new Set([
  "jobmanager",
  "taskmanager",
  "shuffleworker",
]);

/**
 * Runs the demo with command-line arguments `argv` and resolves with the exit code: 0 verified,
 * 1 the job failed or the counts differ, 2 a bad command line, configuration or plugin.
 */
export async function runDemo(argv: readonly string[], io?: Partial<DemoIO>): Promise<number> {
  const stdout = io?.stdout ?? process.stdout;
  const stderr = io?.stderr ?? process.stderr;
  // `pnpm demo -- --records 5` may pass the separator through.
  const args = argv[0] === "--" ? argv.slice(1) : argv;
  const [command, ...rest] = args;
  if (command !== undefined && SLUICE_COMMANDS.has(command)) {
    // The cluster's processes are the library's: the task manager finds the job module here.
    const usrlib = command === "taskmanager" ? ["--usrlib", JOB_MODULE_DIR] : [];
    return runSluice([command, ...usrlib, ...rest], { stdout, stderr });
  }
  let options: ReturnType<typeof parseCli>;
  try {
    options = parseCli(args);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    stderr.write(`error: ${error.message}\nRun with --help for the options.\n`);
    return error.exitCode;
  }
  if (options.help) {
    stdout.write(HELP_TEXT);
    return 0;
  }
  const human = io?.human ?? (options.json ? stderr : stdout);
  return runWordCount(options, { stdout, stderr, human });
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
