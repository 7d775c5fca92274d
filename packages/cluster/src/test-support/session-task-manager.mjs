/**
 * A task manager in a process of its own for the long-session test: it connects to the job
 * manager at argv[2]:argv[3], runs the numbers jobs' invokables (a source of numbers and a
 * checkpointed sum), and answers the application message `footprint` with what it holds right
 * after a full garbage collection (it runs with `--expose-gc`). It runs the compiled packages and
 * exits 0 when the job manager shuts it down.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { footprint, numbers, sum } from "./session-jobs.mjs";

const [host, port] = process.argv.slice(2);
const taskManager = await TaskManager.start(new Configuration({}), {
  jobManager: { host, port: Number(port) },
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
  invokables: { numbers, sum },
  onApplicationMessage: (name) => {
    if (name !== "footprint") throw new Error(`unknown message ${name}`);
    const { executor } = taskManager;
    return {
      ...footprint(),
      runningTasks: executor.runningTasks.length,
      partitions: executor.shuffleEnvironment.getPartitionsOccupyingLocalResources().length,
    };
  },
});
const end = await taskManager.terminated;
process.exitCode = end.failed ? 1 : 0;
