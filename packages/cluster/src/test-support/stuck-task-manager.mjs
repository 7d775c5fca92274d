/**
 * A task manager in a process of its own whose invokable `stuck` ignores `task.signal`: once
 * running, it keeps a timer going and never returns. It connects to the job manager at
 * argv[2]:argv[3] and, like a task manager process should, exits (code 70) when its TaskManager
 * ends for a fatal error, after printing the error; the timer would keep it alive otherwise. It
 * runs the compiled packages.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";

const [host, port] = process.argv.slice(2);
const taskManager = await TaskManager.start(new Configuration({}), {
  jobManager: { host, port: Number(port) },
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
  invokables: {
    stuck: () => {
      process.stdout.write("running\n");
      return new Promise(() => setInterval(() => {}, 1_000));
    },
  },
  onFatalError: (error) => process.stderr.write(`fatal: ${error.message}\n`),
});
const end = await taskManager.terminated;
process.stderr.write(`ended: ${end.reason}: ${end.message}\n`);
process.exit(end.reason === "fatal-error" ? 70 : end.failed ? 1 : 0);
