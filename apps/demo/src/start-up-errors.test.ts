/**
 * A busy port at start-up is a configuration mistake: the demo's job manager and task manager
 * roles exit 2 with a message naming the key and the address, not 1 with a raw stack.
 */
import { JobManager } from "@sluice/cluster";
import { type HeldPort, holdPort } from "@sluice/core/testing";
import { Configuration } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { APP_DIR, APP_VERSION } from "./demo-application.js";
import { runDemo } from "./main.js";
import { capture } from "./test-support/captured-output.js";

const heldPorts: HeldPort[] = [];
const jobManagers: JobManager[] = [];
afterEach(async () => {
  await Promise.all(jobManagers.splice(0).map((jobManager) => jobManager.close()));
  await Promise.all(heldPorts.splice(0).map((held) => held.close()));
});

/** A port a real server holds. */
async function busyPort(): Promise<number> {
  const held = await holdPort();
  heldPorts.push(held);
  return held.port;
}

describe("the demo with a busy port", () => {
  it("exits 2 when the job manager's jobmanager.rpc.port is in use, naming the key and the address", async () => {
    const port = await busyPort();
    const err = capture();
    const code = await runDemo(
      ["jobmanager", "-D", `jobmanager.rpc.port=${port}`, "-D", "rest.port=0", "--records", "100"],
      { stdout: capture().stream, stderr: err.stream },
    );
    expect(code).toBe(2);
    expect(err.text()).toBe(
      `error: the job manager's control plane cannot listen on 127.0.0.1:${port} (jobmanager.rpc.port): the port is in use by another socket [EADDRINUSE]; set jobmanager.rpc.port to a free port (0 picks one)\n`,
    );
  });

  it("exits 2 when a task manager's taskmanager.data.port is in use, naming the key and the address", async () => {
    const jobManager = await JobManager.start(
      new Configuration({
        "shuffle-service-factory.class": "tcp",
        "jobmanager.rpc.port": 0,
        "taskmanager.memory.network.min": "4mb",
      }),
      { applicationVersion: APP_VERSION, loader: { applicationDirs: [APP_DIR] } },
    );
    jobManagers.push(jobManager);
    const port = await busyPort();
    const err = capture();
    const code = await runDemo(
      [
        "taskmanager",
        "--jobmanager",
        `127.0.0.1:${jobManager.port}`,
        "-D",
        `taskmanager.data.port=${port}`,
      ],
      { stdout: capture().stream, stderr: err.stream },
    );
    expect(code).toBe(2);
    expect(err.text()).toMatch(
      new RegExp(
        `^error: task manager \\(pid \\d+\\): ConfigurationError \\[SLUICE_ERR_CONFIG\\]: the data server of TaskExecutor \\w+ cannot listen on 127\\.0\\.0\\.1:${port} \\(taskmanager\\.data\\.port\\): the port is in use`,
      ),
    );
    expect(jobManager.taskManagers).toEqual([]);
  });
});
