/**
 * A task manager process of the keyed job module: it connects to the job manager at
 * argv[2]:argv[3] with the module's code, runs what the job manager deploys, and exits 0 when the
 * job manager shuts it down.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import job from "./keyed-job.mjs";

const [host, port] = process.argv.slice(2);
const taskManager = await TaskManager.start(new Configuration({}), {
  ...job.userCode,
  jobManager: { host, port: Number(port) },
  // This package's folder: the shuffle plugins are its dev dependencies.
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
});
const end = await taskManager.terminated;
process.exitCode = end.failed ? 1 : 0;
