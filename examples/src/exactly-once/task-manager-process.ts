/**
 * A task manager process of the keyed counting job, where its counters run: it registers with
 * the job manager named by `-D jobmanager.rpc.address/port` and runs what it deploys until the
 * job manager shuts it down. With `-D taskmanager.task-slots.mode=threaded` its slots run on
 * threads, which load the job's code by reference.
 */
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { keyedCountingCode } from "./keyed-counting-job.js";

const configuration = Configuration.load({ args: process.argv.slice(2) });
const threaded = configuration.toObject()["taskmanager.task-slots.mode"] === "threaded";
const module = fileURLToPath(new URL("./keyed-counting-job.js", import.meta.url));
const taskManager = await TaskManager.start(
  configuration,
  threaded ? { userCodeModule: `${module}#keyedCountingModule` } : keyedCountingCode,
);
console.log(`task manager ${taskManager.index} registered`);
const end = await taskManager.terminated;
console.log(`task manager ended: ${end.reason} (${end.message})`);
process.exitCode = end.failed ? 1 : 0;
