import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { waitFor } from "@sluice/core/testing";
import { Configuration, JobGraph } from "@sluice/runtime";
import { afterEach, describe, expect, it } from "vitest";
import { LocalCluster } from "./local-cluster.js";

/**
 * A checkpointed job module: each source subtask emits its share of 0..n-1 (its offset is its
 * state, and it slows down so that checkpoints complete while it runs), one sum adds them up
 * (its count and sum are its state).
 */
const JOB_MODULE = `
const yieldNow = () => new Promise((resolve) => setImmediate(resolve));
export default {
  userCode: {
    invokables: {
      numbers: async (task) => {
        const state = { next: task.restoredState?.next ?? task.subtaskIndex };
        task.setCheckpointHandler({ snapshotState: () => ({ ...state }) });
        const writer = task.writer();
        const { records } = task.configuration;
        while (state.next < records) {
          // A source runs its checkpoint triggers where it yields to its mailbox.
          if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
          writer.emit(state.next);
          state.next += task.numberOfSubtasks;
          if (state.next % 256 < task.numberOfSubtasks) {
            await task.yieldToMailbox(new Promise((r) => setTimeout(r, 10)));
          }
        }
      },
      sum: async (task) => {
        const state = { count: task.restoredState?.count ?? 0, sum: task.restoredState?.sum ?? 0 };
        task.setCheckpointHandler({ snapshotState: () => ({ ...state }) });
        for await (const value of task.reader()) {
          state.count++;
          state.sum += value;
        }
        return state;
      },
    },
  },
  createJobGraph() {},
};
`;

const folders: string[] = [];
let cluster: LocalCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

function usrlib(): string {
  const folder = mkdtempSync(path.join(tmpdir(), "sluice-usrlib-"));
  folders.push(folder);
  writeFileSync(path.join(folder, "numbers.mjs"), JOB_MODULE);
  return folder;
}

function numbersGraph(records: number): JobGraph {
  const graph = new JobGraph("numbers");
  graph.setUserCodeModule("./numbers.mjs");
  const numbers = graph.addVertex({
    name: "Numbers",
    parallelism: 2,
    invokable: "numbers",
    configuration: { records },
  });
  const sum = graph.addVertex({ name: "Sum", parallelism: 1, invokable: "sum" });
  graph.connect(numbers, sum, { partitioner: { name: "REBALANCE" }, serializer: "int32" });
  return graph;
}

describe("LocalCluster", () => {
  it("runs a job module's job on task manager processes that load it from their usrlib", async () => {
    cluster = await LocalCluster.start({
      taskManagers: 2,
      usrlib: [usrlib()],
      output: "ignore",
      configuration: new Configuration({ "taskmanager.memory.network.min": "8mb" }),
    });
    expect(cluster.taskManagers.map((tm) => tm.registered?.pid)).toEqual(
      cluster.taskManagers.map((tm) => tm.pid),
    );
    const result = await (await cluster.submit(numbersGraph(20_000))).terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Sum")).toEqual([{ count: 20_000, sum: (19_999 * 20_000) / 2 }]);
  }, 60_000);

  it("survives a task manager process killed during a checkpointed job, with a process started in its place: exactly once", async () => {
    const checkpoints = mkdtempSync(path.join(tmpdir(), "sluice-checkpoints-"));
    folders.push(checkpoints);
    const started: [number, number | undefined][] = [];
    cluster = await LocalCluster.start({
      taskManagers: 2,
      usrlib: [usrlib()],
      output: "ignore",
      replaceLostTaskManagers: true,
      onTaskManagerStarted: (process, replacing) => started.push([process.pid, replacing?.pid]),
      configuration: new Configuration({
        "taskmanager.memory.network.min": "8mb",
        "state.checkpoints.dir": checkpoints,
        "execution.checkpointing.interval": "100ms",
        "restart-strategy.type": "fixed-delay",
        "restart-strategy.fixed-delay.attempts": 3,
        "restart-strategy.fixed-delay.delay": "100ms",
        "heartbeat.interval": "200ms",
        "heartbeat.timeout": "2s",
      }),
    });
    const records = 100_000;
    const execution = await cluster.submit(numbersGraph(records));
    // Once a checkpoint completed, the second task manager process dies; a replacement joins.
    await waitFor(() => (execution.checkpointCoordinator?.numberOfCompletedCheckpoints ?? 0) >= 1, {
      what: "a completed checkpoint",
      timeoutMs: 30_000,
    });
    expect(execution.status).toBe("RUNNING");
    const [first, killed] = cluster.taskManagers;
    killed?.kill("SIGKILL");
    const result = await execution.terminated;
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBeGreaterThanOrEqual(1);
    // The lost one's replacement, started by the cluster, ran its subtasks.
    const replacement = cluster.taskManagers[2];
    expect(started).toEqual([
      [first?.pid, undefined],
      [killed?.pid, undefined],
      [replacement?.pid, killed?.pid],
    ]);
    expect(replacement?.registered).toBeDefined();
    expect(execution.executionVertices.map((v) => v.gateway)).toContain(replacement?.registered);
    expect(result.results.get("Sum")).toEqual([
      { count: records, sum: ((records - 1) * records) / 2 },
    ]);
  }, 90_000);
});
