/**
 * Flink's task cancellation watchdog on an embedded TaskExecutor (one in the application's
 * process, which cannot be ended for a task): a canceled task whose code ignores `task.signal`
 * is given up after `task.cancellation.timeout`, its job ends CANCELED, and closing the deployer
 * returns. With a fatal-error handler (a task manager's) the handler hears of it. Every network
 * buffer is back in its pool afterwards (the cluster's clean-up checks).
 */
import { deferred, ErrorCodes } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import { afterAll, afterEach, expect, it } from "vitest";
import { JobGraph } from "../jobmaster/job-graph.js";
import { TASK_WARNING_TYPE } from "./task-executor.js";
import { LocalCluster, localConfiguration } from "./test-support/local-cluster.js";

const TIMEOUT_MS = 300;
/** What the job side and the clean-up may take beyond the timeout on a loaded machine. */
const BOUND_MS = 5_000;

const cluster = new LocalCluster();
/** Lets the stuck tasks' code return at the end of a test, so that none keeps running. */
let unstick = deferred<void>();
const warnings: string[] = [];
const onWarning = (warning: Error) => {
  if (warning.name === TASK_WARNING_TYPE) warnings.push(warning.message);
};
process.on("warning", onWarning);
afterAll(() => {
  process.off("warning", onWarning);
});
afterEach(async () => {
  unstick.resolve();
  unstick = deferred<void>();
  warnings.length = 0;
  await cluster.close();
});

/** A source whose code never looks at `task.signal`: it returns only when the test lets it. */
function stuckGraph(): JobGraph {
  const graph = new JobGraph("stuck");
  graph.addVertex({ name: "Stuck", parallelism: 1, invokable: "stuck" });
  return graph;
}

async function deployStuck(onFatalError?: (error: Error) => void) {
  const configuration = localConfiguration({ "task.cancellation.timeout": `${TIMEOUT_MS}ms` });
  const running = deferred<void>();
  const executor = await cluster.startExecutor(configuration, {
    invokables: {
      stuck: async () => {
        running.resolve();
        await unstick.promise;
      },
    },
    ...(onFatalError === undefined ? {} : { onFatalError }),
  });
  const deployer = await cluster.startDeployer(configuration);
  const execution = await deployer.deploy(stuckGraph(), () => executor);
  await running.promise;
  return { executor, deployer, execution };
}

function settledWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref()),
  ]);
}

it("gives up a canceled task whose code ignores task.signal: the job ends CANCELED within task.cancellation.timeout", async () => {
  const { executor, execution } = await deployStuck();
  const canceledAt = Date.now();
  execution.cancel("the test cancels the job");
  const result = await execution.terminated;
  const tookMs = Date.now() - canceledAt;
  expect(result.status).toBe("CANCELED");
  expect(tookMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
  expect(tookMs).toBeLessThan(TIMEOUT_MS + BOUND_MS);
  expect(executor.runningTasks).toHaveLength(0);
  await waitFor(() => warnings.length > 0, { what: "the watchdog's warning" });
  const [vertex] = execution.executionVertices;
  expect(warnings).toEqual([
    `Stuck (1/1)#0 (${vertex?.attemptId}) did not end within ${TIMEOUT_MS} ms (task.cancellation.timeout) of being canceled: its code ignores task.signal; it was given up`,
  ]);
});

it("bounds the deployer's close() by task.cancellation.timeout when a job's task ignores its cancellation", async () => {
  const { deployer, execution } = await deployStuck();
  const closing = deployer.close();
  expect(await settledWithin(closing, TIMEOUT_MS + BOUND_MS)).toBe(true);
  expect((await execution.terminated).status).toBe("CANCELED");
});

it("tells the TaskExecutor's fatal-error handler, naming the task and the timeout, and still ends the task", async () => {
  const fatal = deferred<Error>();
  const { executor, execution } = await deployStuck((error) => fatal.resolve(error));
  execution.cancel();
  const error = await fatal.promise;
  expect(error).toMatchObject({ code: ErrorCodes.TIMEOUT });
  const [vertex] = execution.executionVertices;
  expect(error.message).toBe(
    `Stuck (1/1)#0 (${vertex?.attemptId}) did not end within ${TIMEOUT_MS} ms (task.cancellation.timeout) of being canceled: its code ignores task.signal`,
  );
  expect((await execution.terminated).status).toBe("CANCELED");
  expect(executor.runningTasks).toHaveLength(0);
  expect(warnings).toEqual([]);
});
