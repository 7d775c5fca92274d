/**
 * Start-up mistakes surface as coded errors a caller can catch: a busy control-plane or data
 * port is a ConfigurationError naming the key and the address, with nothing left listening, and
 * waiting for task managers ends (`slot.request.timeout`) naming the ones that were refused.
 */
import { ConfigurationError, ErrorCodes, TimeoutError } from "@sluice/core";
import { expectRejection, type HeldPort, holdPort, waitFor } from "@sluice/core/testing";
import { Configuration, TaskExecutor } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { JobManager } from "./job-manager.js";
import {
  closeTestCluster,
  jobManagerConfiguration,
  LOADER,
  startJobManager,
  startTaskManager,
} from "./test-support/test-cluster.js";

const heldPorts: HeldPort[] = [];
afterEach(async () => {
  await closeTestCluster();
  await Promise.all(heldPorts.splice(0).map((held) => held.close()));
});

/** A port a real server holds. */
async function busyPort(): Promise<number> {
  const held = await holdPort();
  heldPorts.push(held);
  return held.port;
}

/**
 * Waits until this process listens with no server but the busy ones (a server whose listen
 * failed closes its handle a moment after the error).
 */
function nothingElseListens(): Promise<void> {
  const listening = () =>
    process.getActiveResourcesInfo().filter((name) => name === "TCPServerWrap").length;
  return waitFor(() => listening() === heldPorts.length, {
    what: `no listening server but the ${heldPorts.length} busy one(s)`,
  });
}

describe("a busy port at start-up", () => {
  it("makes JobManager.start reject with a ConfigurationError naming jobmanager.rpc.port and the address, leaving nothing open", async () => {
    const port = await busyPort();
    const error = await expectRejection(
      JobManager.start(jobManagerConfiguration({ "jobmanager.rpc.port": port }), {
        loader: LOADER,
      }),
      ConfigurationError,
      ErrorCodes.CONFIG,
    );
    expect(error.message).toBe(
      `the job manager's control plane cannot listen on 127.0.0.1:${port} (jobmanager.rpc.port): the port is in use by another socket [EADDRINUSE]; set jobmanager.rpc.port to a free port (0 picks one)`,
    );
    await nothingElseListens();
  });

  it.each(["tcp", "ws"])(
    "makes TaskExecutor.start (%s) reject with a ConfigurationError naming taskmanager.data.port and the address",
    async (shuffle) => {
      const port = await busyPort();
      const error = await expectRejection(
        TaskExecutor.start(
          new Configuration({
            "shuffle-service-factory.class": shuffle,
            "taskmanager.memory.network.min": "1mb",
            "taskmanager.data.port": port,
          }),
          { loader: LOADER },
        ),
        ConfigurationError,
        ErrorCodes.CONFIG,
      );
      expect(error.message).toMatch(
        new RegExp(
          `^the data server of TaskExecutor \\w+ cannot listen on 127\\.0\\.0\\.1:${port} \\(taskmanager\\.data\\.port\\): the port is in use by another socket \\[EADDRINUSE\\]; set taskmanager\\.data\\.port to a free port`,
        ),
      );
      await nothingElseListens();
    },
  );

  it("names taskmanager.data.bind-port when the data server listens on a separate bind port", async () => {
    const port = await busyPort();
    const error = await expectRejection(
      TaskExecutor.start(
        new Configuration({
          "shuffle-service-factory.class": "tcp",
          "taskmanager.memory.network.min": "1mb",
          "taskmanager.data.port": 31999,
          "taskmanager.data.bind-port": port,
        }),
        { loader: LOADER },
      ),
      ConfigurationError,
      ErrorCodes.CONFIG,
    );
    expect(error.message).toContain(`127.0.0.1:${port} (taskmanager.data.bind-port)`);
  });

  it("makes TaskManager.start reject with it, and the task manager never registers", async () => {
    const jobManager = await startJobManager();
    const port = await busyPort();
    await expectRejection(
      startTaskManager(jobManager, { "taskmanager.data.port": port }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      `(taskmanager.data.port)`,
    );
    expect(jobManager.taskManagers).toEqual([]);
  });
});

describe("waiting for task managers", () => {
  it("ends after slot.request.timeout by default, naming a task manager that was refused and why", async () => {
    const jobManager = await startJobManager({ "slot.request.timeout": "300ms" });
    // Its own keys win over the job manager's: it loads another plugin, and is refused for it.
    await expectRejection(
      startTaskManager(jobManager, { "shuffle-service-factory.class": "ws" }),
      ConfigurationError,
      ErrorCodes.CONFIG,
      "every process of a job must load the same plugin",
    );
    const error = await expectRejection(
      jobManager.waitForTaskManagers(1),
      TimeoutError,
      ErrorCodes.TIMEOUT,
    );
    expect(error.message).toMatch(
      /^0 of 1 task managers registered with the job manager at ws:\/\/127\.0\.0\.1:\d+ within 300 ms \(slot\.request\.timeout\); refused: the task manager with pid \d+ on .+: .* loaded the shuffle plugin .*ws.*, but the job manager runs .*tcp.*/,
    );
    expect(jobManager.refusedTaskManagers).toHaveLength(1);
    expect(jobManager.refusedTaskManagers[0]?.reason).toMatchObject({ code: ErrorCodes.CONFIG });
  });

  it("says that none was refused when none came", async () => {
    const jobManager = await startJobManager({ "slot.request.timeout": "100ms" });
    const error = await expectRejection(
      jobManager.waitForTaskManagers(1),
      TimeoutError,
      ErrorCodes.TIMEOUT,
    );
    expect(error.message).toMatch(
      /within 100 ms \(slot\.request\.timeout\); no task manager was refused$/,
    );
  });
});
