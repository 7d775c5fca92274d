/**
 * A job manager process of the keyed counting job: a JobManager, and a TaskExecutor of its own
 * that runs the producer, while the counters run on a task manager in another process. Started
 * with IPC (`fork`), it reports its control-plane port, then runs each job the test sends and
 * replies with its result. When the counters' task manager is lost, a restarted job waits for
 * the next one that registers. Arguments are `-D key=value` configuration.
 */
import { JobManager, type RegisteredTaskManager } from "@sluice/cluster";
import { Configuration, type Placement, TaskExecutor } from "@sluice/runtime";
import type { FromJobManager, RunResult, ToJobManager } from "./job-manager-messages.js";
import {
  counterResults,
  isProducer,
  type KeyedCountingJobSpec,
  keyedCountingCode,
  keyedCountingJob,
} from "./keyed-counting-job.js";

/** How long a restarted job waits for a task manager to run its counters. */
const REPLACEMENT_TIMEOUT_MS = 60_000;

function send(message: FromJobManager): void {
  process.send?.(message);
}

const configuration = Configuration.load({ args: process.argv.slice(2) });
const jobManager = await JobManager.start(configuration);
const executor = await TaskExecutor.start(configuration, keyedCountingCode);
send({ kind: "listening", port: jobManager.port });

/** A connected task manager the job was not told is lost, once one is there. */
async function counterTaskManager(
  isLost: (gateway: RegisteredTaskManager) => boolean,
): Promise<RegisteredTaskManager> {
  const deadline = Date.now() + REPLACEMENT_TIMEOUT_MS;
  for (;;) {
    const found = jobManager.taskManagers.find((tm) => tm.connected && !isLost(tm));
    if (found !== undefined) return found;
    if (Date.now() > deadline) {
      throw new Error(`no task manager registered within ${REPLACEMENT_TIMEOUT_MS} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const placement: Placement = (vertex, _subtask, { isLost }) =>
  isProducer(vertex.name) ? executor : counterTaskManager(isLost);

async function run(spec: KeyedCountingJobSpec): Promise<RunResult> {
  const jobConfiguration = configuration
    .clone()
    .set("execution.checkpointing.interval", `${spec.checkpointIntervalMs}ms`)
    .set("execution.checkpointing.unaligned.enabled", spec.unaligned);
  await jobManager.waitForTaskManagers(1, REPLACEMENT_TIMEOUT_MS);
  const execution = await jobManager.deploy(keyedCountingJob(spec), placement, {
    configuration: jobConfiguration,
  });
  let reported = 0;
  const watch = setInterval(() => {
    const completed = execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0;
    if (completed > reported) send({ kind: "checkpoints", completed });
    reported = completed;
  }, 5);
  try {
    const result = await execution.terminated;
    const restoredFrom = result.checkpoints.restoredFrom;
    return {
      status: result.status,
      ...(result.error === undefined ? {} : { error: String(result.error) }),
      restarts: result.restarts,
      completedCheckpoints: result.checkpoints.completed,
      restoredFrom: restoredFrom === undefined ? null : Number(restoredFrom),
      restoredInFlightBytes: result.checkpoints.restoredPersistedDataBytes ?? 0,
      counters: counterResults(result.results),
    };
  } finally {
    clearInterval(watch);
  }
}

process.on("message", (message: ToJobManager) => {
  if (message.kind === "run") {
    run(message.spec).then(
      (result) => send({ kind: "result", result }),
      (error: unknown) => send({ kind: "error", message: String(error) }),
    );
    return;
  }
  void (async () => {
    await jobManager.close({ reason: "the test is done" });
    await executor.close();
    process.disconnect();
  })();
});
