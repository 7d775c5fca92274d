/**
 * A busy port at start-up is a configuration mistake: the demo exits 2 with a message naming the
 * key and the address, not 1 with a raw stack — for its job manager's control plane, and for a
 * task manager's data port (a host-local key its task manager processes get from it).
 */
import { type HeldPort, holdPort } from "@sluice/core/testing";
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { runDemo } from "./main.js";
import { capture } from "./test-support/captured-output.js";
import { buildDemoIfStale } from "./test-support/demo-process.js";

beforeAll(buildDemoIfStale, 300_000);

const heldPorts: HeldPort[] = [];
afterEach(async () => {
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
      ["-D", `jobmanager.rpc.port=${port}`, "-D", "rest.port=0", "--records", "100"],
      { stdout: capture().stream, stderr: err.stream },
    );
    expect(code).toBe(2);
    expect(err.text()).toMatch(/^error: [^\n]*\n$/);
    expect(err.text()).toContain(
      `error: ConfigurationError [SLUICE_ERR_CONFIG]: the job manager's control plane cannot listen on 127.0.0.1:${port} (jobmanager.rpc.port): the port is in use by another socket [EADDRINUSE]; set jobmanager.rpc.port to a free port (0 picks one)`,
    );
  });

  it("exits 2 when a task manager's taskmanager.data.port is in use, naming the key and the address", async () => {
    const port = await busyPort();
    const err = capture();
    const code = await runDemo(
      [
        "-D",
        `taskmanager.data.port=${port}`,
        "-D",
        "rest.port=0",
        "--records",
        "100",
        "--task-managers",
        "1",
      ],
      { stdout: capture().stream, stderr: err.stream },
    );
    expect(code, err.text()).toBe(2);
    expect(err.text()).toMatch(
      new RegExp(
        `error: task manager \\(pid \\d+\\): ConfigurationError \\[SLUICE_ERR_CONFIG\\]: the data server of TaskExecutor \\w+ cannot listen on 127\\.0\\.0\\.1:${port} \\(taskmanager\\.data\\.port\\): the port is in use`,
      ),
    );
    expect(err.text()).toMatch(
      /error: the job failed: task manager \(pid \d+\) exited unexpectedly with code 2/,
    );
  }, 60_000);
});
