/**
 * A task manager process of the keyed counting job, where its counters run: it registers with
 * the job manager named by `-D jobmanager.rpc.address/port` and runs what it deploys until the
 * job manager shuts it down.
 */
import { TaskManager } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { keyedCountingCode } from "./keyed-counting-job.js";

const configuration = Configuration.load({ args: process.argv.slice(2) });
const taskManager = await TaskManager.start(configuration, keyedCountingCode);
console.log(`task manager ${taskManager.index} registered`);
const end = await taskManager.terminated;
console.log(`task manager ended: ${end.reason} (${end.message})`);
process.exitCode = end.failed ? 1 : 0;
