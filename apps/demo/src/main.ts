#!/usr/bin/env node
/**
 * The Sluice demo: `node apps/demo/dist/main.js [options]` runs the coordinator;
 * `main.js taskmanager --index <i>` is how the coordinator starts each worker process (the word
 * `taskmanager` in the command line makes workers recognisable in `ps`).
 */
import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { HELP_TEXT, parseCli, UsageError } from "./cli.js";
import { Coordinator, type DemoIO } from "./coordinator.js";
import { runTaskManager } from "./task-manager.js";

/**
 * Runs the demo's coordinator with command-line arguments `argv` and resolves with the exit
 * code: 0 verified, 1 the job failed or the counts differ, 2 a bad command line or configuration.
 */
export async function runDemo(argv: readonly string[], io?: Partial<DemoIO>): Promise<number> {
  const stdout = io?.stdout ?? process.stdout;
  const stderr = io?.stderr ?? process.stderr;
  let options: ReturnType<typeof parseCli>;
  try {
    // `pnpm demo -- --records 5` may pass the separator through.
    options = parseCli(argv[0] === "--" ? argv.slice(1) : argv);
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
  return new Coordinator(options, { stdout, stderr, human }).run();
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
  const args = process.argv.slice(2);
  if (args[0] === "taskmanager") {
    runTaskManager(args);
  } else {
    runDemo(args).then(
      (code) => process.exit(code),
      (error: unknown) => {
        process.stderr.write(`error: ${(error as Error)?.stack ?? String(error)}\n`);
        process.exit(1);
      },
    );
  }
}
