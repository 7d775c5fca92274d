/**
 * A task manager that accepts tasks and runs none, while it answers heartbeats: the job does not
 * wait for it for ever.
 */
import { ErrorCodes } from "@sluice/core";
import { must } from "@sluice/core/testing";
import { JobGraph } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import {
  RawControlClient,
  type RawMessage,
  terminateRawClients,
} from "./test-support/raw-control-client.js";
import { closeTestCluster, startJobManager } from "./test-support/test-cluster.js";

afterEach(async () => {
  terminateRawClients();
  await closeTestCluster();
});

describe("a deployed task", () => {
  it("that never reports RUNNING fails after jobmanager.deployment.timeout, naming its task manager", async () => {
    const jobManager = await startJobManager({
      "jobmanager.deployment.timeout": "300ms",
      "restart-strategy.type": "none",
    });
    const hostile = await RawControlClient.open(jobManager.url);
    hostile.answerHeartbeats();
    // It accepts every task, and its cancellations, and never runs one.
    hostile.socket.on("message", (data) => {
      const message = JSON.parse(data.toString()) as RawMessage;
      if (message.method === "submitTask" || message.method === "cancelTask") {
        hostile.send({ jsonrpc: "2.0", id: message.id, result: null });
      }
    });
    await hostile.hello();
    await hostile.register(2, jobManager.plugin);
    const [peer] = await jobManager.waitForTaskManagers(1);
    const graph = new JobGraph("a job on a task manager that runs nothing");
    graph.addVertex({ name: "Idle", parallelism: 1, invokable: "idle" });
    const execution = await jobManager.deploy(graph, () => must(peer));
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error).toMatchObject({ code: ErrorCodes.TIMEOUT });
    expect(result.error?.message).toContain(
      "deployed to task manager 0 (pid 4242) at 10.9.8.7, did not report RUNNING within 300 ms (jobmanager.deployment.timeout)",
    );
    expect(result.failedTask).toBe("Idle (1/1)#0");
  });
});
