import { connect, createServer } from "node:net";
import { Configuration, TaskExecutor } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { LOADER } from "./test-support/test-cluster.js";

const executors: TaskExecutor[] = [];
afterEach(async () => {
  for (const executor of executors.splice(0)) await executor.close();
});

/** A port that was free a moment ago. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
  });
}

describe("a task manager's data port behind a port mapping", () => {
  it("listens on taskmanager.data.bind-port and announces taskmanager.data.port in its location", async () => {
    const bindPort = await freePort();
    const executor = await TaskExecutor.start(
      new Configuration({
        "shuffle-service-factory.class": "tcp",
        "taskmanager.memory.network.min": "1mb",
        "taskmanager.data.port": 31999,
        "taskmanager.data.bind-port": bindPort,
      }),
      { loader: LOADER },
    );
    executors.push(executor);
    expect(executor.location.dataPort).toBe(31999);
    expect(await accepts(bindPort)).toBe(true);
  });

  it("announces the port it listens on when no bind port is set", async () => {
    const executor = await TaskExecutor.start(
      new Configuration({
        "shuffle-service-factory.class": "tcp",
        "taskmanager.memory.network.min": "1mb",
      }),
      { loader: LOADER },
    );
    executors.push(executor);
    expect(executor.location.dataPort).toBeGreaterThan(0);
    expect(await accepts(executor.location.dataPort)).toBe(true);
  });
});
