/** Configurations and start helpers for in-process clusters on 127.0.0.1. */
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Configuration } from "@sluice/runtime";
import { JobManager, type JobManagerStartOptions } from "../job-manager.js";
import { TaskManager, type TaskManagerStartOptions } from "../task-manager.js";

/**
 * This package's folder: the shuffle plugins the tests load are its dev dependencies, as an
 * application lists the plugin it runs.
 */
export const LOADER = {
  applicationDirs: [path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..")],
};

/** Small memory, fast heartbeats, a free port: a job manager's configuration for tests. */
export function jobManagerConfiguration(
  overrides: Readonly<Record<string, unknown>> = {},
): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": "tcp",
    "jobmanager.rpc.address": "127.0.0.1",
    "jobmanager.rpc.port": 0,
    "heartbeat.interval": "50ms",
    "heartbeat.timeout": "1s",
    "taskmanager.memory.network.min": "4mb",
    "taskmanager.memory.segment-size": "16kb",
    ...overrides,
  });
}

const started: { jobManagers: JobManager[]; taskManagers: TaskManager[] } = {
  jobManagers: [],
  taskManagers: [],
};

/** Starts a job manager that {@link closeTestCluster} closes. */
export async function startJobManager(
  overrides: Readonly<Record<string, unknown>> = {},
  options: JobManagerStartOptions = {},
): Promise<JobManager> {
  const jobManager = await JobManager.start(jobManagerConfiguration(overrides), {
    loader: LOADER,
    ...options,
  });
  started.jobManagers.push(jobManager);
  return jobManager;
}

/** Starts a task manager of `jobManager` that {@link closeTestCluster} closes. */
export async function startTaskManager(
  jobManager: { readonly host: string; readonly port: number },
  own: Readonly<Record<string, unknown>> = {},
  options: TaskManagerStartOptions = {},
): Promise<TaskManager> {
  const taskManager = await TaskManager.start(new Configuration(own), {
    jobManager: { host: jobManager.host, port: jobManager.port },
    loader: LOADER,
    connectRetryMs: 0,
    ...options,
  });
  started.taskManagers.push(taskManager);
  return taskManager;
}

/** Closes everything the helpers started (for an `afterEach`). */
export async function closeTestCluster(): Promise<void> {
  await Promise.all(started.taskManagers.splice(0).map((tm) => tm.close("the test ended")));
  await Promise.all(started.jobManagers.splice(0).map((jm) => jm.close({ timeoutMs: 1_000 })));
}
