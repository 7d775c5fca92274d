/**
 * A task manager in a process of its own whose user code takes job messages: it connects to the
 * job manager at argv[2]:argv[3] and runs `wait`, which runs until the job message `stop`
 * arrives (or its task is canceled); the message `where` replies with this process's id and the
 * job's id, and `fail` throws. It runs the compiled packages (child processes do not read
 * TypeScript) and exits 0 when the job manager shuts it down.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TaskManager } from "@sluice/cluster";
import { IllegalStateError } from "@sluice/core";
import { Configuration } from "@sluice/runtime";

const [host, port] = process.argv.slice(2);
/** The waiting tasks of each job, released by `stop`. */
const waiting = new Map();
const taskManager = await TaskManager.start(new Configuration({}), {
  jobManager: { host, port: Number(port) },
  loader: {
    applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
  },
  connectRetryMs: 0,
  invokables: {
    wait: (task) =>
      new Promise((resolve, reject) => {
        const job = task.jobId.toString();
        const release = waiting.get(job) ?? [];
        release.push(() => resolve({ stopped: true }));
        waiting.set(job, release);
        task.signal.addEventListener("abort", () => reject(task.signal.reason));
      }),
  },
  messages: {
    where: (_payload, { jobId }) => ({ pid: process.pid, jobId: jobId.toString() }),
    stop: (payload, { jobId }) => {
      const release = waiting.get(jobId.toString()) ?? [];
      waiting.delete(jobId.toString());
      for (const resolve of release) resolve();
      return { stopped: release.length, payload };
    },
    fail: () => {
      throw new IllegalStateError("the job's handler fails on purpose");
    },
  },
});
const end = await taskManager.terminated;
process.exitCode = end.failed ? 1 : 0;
