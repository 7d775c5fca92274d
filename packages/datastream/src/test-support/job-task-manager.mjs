/**
 * A task manager process of a job module of this folder (argv[4], default `keyed-job.mjs`): it
 * connects to the job manager at argv[2]:argv[3] with the module's code, runs what the job
 * manager deploys, and exits 0 when the job manager shuts it down. With argv[5] `threaded` it runs
 * two slots on worker threads, which load the module by reference; with `threaded-main-slot`, slot
 * 0 on its main thread and slot 1 on a worker thread.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";

const [host, port, moduleName = "keyed-job.mjs", slotsMode = "single-loop"] = process.argv.slice(2);
const modulePath = fileURLToPath(new URL(`./${moduleName}`, import.meta.url));
const { default: job } = await import(modulePath);
const threaded = slotsMode === "threaded" || slotsMode === "threaded-main-slot";
const configuration = new Configuration(
  threaded
    ? {
        "taskmanager.task-slots.mode": "threaded",
        "taskmanager.numberOfTaskSlots": 2,
        "taskmanager.task-slots.main-thread-slot": slotsMode === "threaded-main-slot",
      }
    : {},
);
const taskManager = await TaskManager.start(configuration, {
  ...(threaded ? { userCodeModule: modulePath } : job.userCode),
  jobManager: { host, port: Number(port) },
  // This package's folder: the shuffle plugins are its dev dependencies.
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
});
const end = await taskManager.terminated;
process.exitCode = end.failed ? 1 : 0;
