import {
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "@sluice/shuffle-tck/transport";
import { afterEach, describe, expect, it } from "vitest";
import { TCP_PLUGIN } from "./test-support/plugin.js";

const config: RawConfig = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};

/** Waits until `condition` holds, polling; fails naming `what` after a generous deadline. */
async function until(condition: () => boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${deadlineMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("connections between two workers across jobs, over TCP", () => {
  let cluster: InProcessCluster | undefined;

  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  async function twoWorkers(extra: RawConfig) {
    cluster = new InProcessCluster(TCP_PLUGIN, { ...config, ...extra });
    const producer = await cluster.startExecutor();
    const consumer = await cluster.startExecutor();
    const runJob = async () => {
      const { execution } = await (cluster as InProcessCluster).deploy(
        { producers: 2, consumers: 2, plan: { records: 500, padding: 20 } },
        producer,
        consumer,
      );
      const result = await execution.terminated;
      expect(result.error).toBeUndefined();
      // The producer's partitions are released once every consumer channel cancelled its
      // request, which it does as it leaves the connection.
      await until(
        () => networkEnvironmentOf(producer).getPartitionsOccupyingLocalResources().length === 0,
        "the job's channels released",
      );
    };
    return {
      runJob,
      clientConnections: () => networkEnvironmentOf(consumer).getNumberOfClientConnections(),
      opened: () => networkEnvironmentOf(consumer).getNumberOfClientConnectionsOpened(),
      serverConnections: () => networkEnvironmentOf(producer).getNumberOfServerConnections(),
    };
  }

  it("keeps the connection of a finished job for the next one, then closes it once idle", async () => {
    const workers = await twoWorkers({ "taskmanager.network.idle-connection-timeout": "4s" });
    await workers.runJob();
    expect(workers.clientConnections()).toBe(1);
    await workers.runJob();
    // The second job's channels used the kept connection.
    expect(workers.opened()).toBe(1);
    expect(workers.clientConnections()).toBe(1);
    expect(workers.serverConnections()).toBe(1);
    // Unused for half the idle timeout, the consumer closes it, before the server would.
    await until(() => workers.clientConnections() === 0, "the idle connection closed");
    await until(() => workers.serverConnections() === 0, "the server saw it close");
  }, 60_000);

  it("closes the connection with its last channel when reuse across jobs is off", async () => {
    const workers = await twoWorkers({
      "taskmanager.network.tcp-connection.enable-reuse-across-jobs": false,
    });
    await workers.runJob();
    await until(() => workers.clientConnections() === 0, "the connection closed with the job");
    await workers.runJob();
    expect(workers.opened()).toBe(2);
  }, 60_000);
});
