import { type Deferred, deferred, type ExecutionAttemptID } from "@sluice/core";
import { waitFor } from "@sluice/core/testing";
import type { PartitionInfo } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Configuration } from "../config/configuration.js";
import type { JobMasterGateway } from "../messages/job-master-gateway.js";
import {
  type TaskDeploymentDescriptor,
  taskNameWithSubtask,
} from "../messages/task-deployment-descriptor.js";
import type { TaskExecutorGateway } from "../messages/task-executor-gateway.js";
import type { Task } from "../taskexecutor/task.js";
import type { TaskExecutor } from "../taskexecutor/task-executor.js";
import { LocalCluster, localConfiguration } from "../taskexecutor/test-support/local-cluster.js";
import { deploymentWaves } from "./deployment-waves.js";
import type { JobDeployer } from "./job-deployer.js";
import type { JobExecution } from "./job-execution.js";
import { JobGraph, type JobVertex } from "./job-graph.js";
import type { DeploymentOrder } from "./pipelined-region-scheduling-strategy.js";

const REBALANCE = { partitioner: { name: "REBALANCE" as const }, serializer: "int32" };
const RECORDS = 500;

const INVOKABLES = {
  /** Writes `RECORDS` numbers. */
  numbers: async (task: Task) => {
    const writer = task.writer<number>();
    for (let i = 0; i < RECORDS; i++) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.emit(i);
    }
    return RECORDS;
  },
  /** Counts what it reads. */
  count: async (task: Task) => {
    let records = 0;
    for await (const _ of task.reader<number>()) records++;
    return records;
  },
};

/** Source (p) → ALL_TO_ALL, pipelined → Count (p). */
function sourceToCount(parallelism: number) {
  const graph = new JobGraph("all to all");
  const source = graph.addVertex({ name: "Source", parallelism, invokable: "numbers" });
  const count = graph.addVertex({ name: "Count", parallelism, invokable: "count" });
  graph.connect(source, count, REBALANCE);
  return graph;
}

/**
 * `executor` behind a control plane whose `submitTask` of a vertex's subtask answers only once
 * the submits of all `parallelism` subtasks of that vertex arrived: a job side that awaits each
 * answer before the next submit never gets one. Logs each arrival (`submit Name (i/n)#a`) and
 * answer (`answered …`); the submit of the task named `refuse` then fails instead. {@link releaseAll}
 * lets every held submit through (for the clean-up).
 */
function answeringOnceAllOfAVertexArrived(
  executor: TaskExecutor,
  parallelism: number,
  log: string[],
  refuse?: string,
) {
  const arrivals = new Map<string, { count: number; all: Deferred<void> }>();
  const arrivalsOf = (vertex: string) => {
    let entry = arrivals.get(vertex);
    if (entry === undefined) {
      entry = { count: 0, all: deferred() };
      arrivals.set(vertex, entry);
    }
    return entry;
  };
  const gateway: TaskExecutorGateway & { releaseAll(): void } = {
    location: executor.location,
    async submitTask(descriptor: TaskDeploymentDescriptor, jobMaster: JobMasterGateway) {
      const name = taskNameWithSubtask(descriptor);
      log.push(`submit ${name}`);
      const vertex = arrivalsOf(descriptor.taskName);
      if (++vertex.count === parallelism) vertex.all.resolve();
      await vertex.all.promise;
      if (name === refuse) throw new Error(`the task manager refuses ${name}`);
      await executor.submitTask(descriptor, jobMaster);
      log.push(`answered ${name}`);
    },
    cancelTask: (attempt: ExecutionAttemptID) => executor.cancelTask(attempt),
    updatePartitions: (attempt: ExecutionAttemptID, infos: readonly PartitionInfo[]) =>
      executor.updatePartitions(attempt, infos),
    releasePartitions: (jobId, ids) => executor.releasePartitions(jobId, ids),
    releaseAll() {
      for (const { all } of arrivals.values()) all.resolve();
    },
  };
  return gateway;
}

/** The positions in `log` of the entries that start with `prefix`. */
function positions(log: readonly string[], prefix: string): number[] {
  return log.flatMap((entry, i) => (entry.startsWith(prefix) ? [i] : []));
}

describe("deploymentWaves", () => {
  it("puts a vertex in the wave after the latest wave of a connected vertex before it, and an unconnected vertex in the first", () => {
    const graph = new JobGraph("chain and a loner");
    const source = graph.addVertex({ name: "Source", parallelism: 2, invokable: "numbers" });
    const relay = graph.addVertex({ name: "Relay", parallelism: 3, invokable: "count" });
    const sink = graph.addVertex({ name: "Sink", parallelism: 1, invokable: "count" });
    const loner = graph.addVertex({ name: "Loner", parallelism: 2, invokable: "numbers" });
    const other = graph.addVertex({ name: "Other", parallelism: 1, invokable: "count" });
    graph.connect(source, relay, REBALANCE);
    graph.connect(relay, sink, REBALANCE);
    // Sink also reads Source directly: it still waits for Relay, the later of the two.
    graph.connect(source, sink, REBALANCE);
    graph.connect(loner, other, REBALANCE);
    // What the scheduler hands over: each vertex's subtasks in a row, in deployment order.
    const ready = (vertices: JobVertex[]) =>
      vertices.flatMap((vertex) =>
        Array.from({ length: vertex.parallelism }, (_, i) => ({
          execution: { vertex, name: `${vertex.name} (${i + 1}/${vertex.parallelism})` },
        })),
      );
    const names = (waves: { execution: { name: string } }[][]) =>
      waves.map((wave) => wave.map(({ execution }) => execution.name));

    expect(names(deploymentWaves(graph, ready([source, loner, relay, other, sink])))).toEqual([
      ["Source (1/2)", "Source (2/2)", "Loner (1/2)", "Loner (2/2)"],
      ["Relay (1/3)", "Relay (2/3)", "Relay (3/3)", "Other (1/1)"],
      ["Sink (1/1)"],
    ]);
    // Consumers first: the same chain, the other way round.
    expect(names(deploymentWaves(graph, ready([sink, other, relay, loner, source])))).toEqual([
      ["Sink (1/1)", "Other (1/1)"],
      ["Relay (1/3)", "Relay (2/3)", "Relay (3/3)", "Loner (1/2)", "Loner (2/2)"],
      ["Source (1/2)", "Source (2/2)"],
    ]);
    expect(deploymentWaves(graph, [])).toEqual([]);
  });
});

describe("JobExecution deploying a pipelined region", () => {
  const PARALLELISM = 4;
  /** Generous, for a loaded machine. */
  const DEPLOY_TIMEOUT_MS = 20_000;
  let cluster: LocalCluster;
  let deployer: JobDeployer;
  let executor: TaskExecutor;
  let gateway: ReturnType<typeof answeringOnceAllOfAVertexArrived> | undefined;

  beforeEach(async () => {
    cluster = new LocalCluster();
    deployer = await cluster.startDeployer();
    executor = await cluster.startExecutor(undefined, { invokables: INVOKABLES });
  });
  afterEach(async () => {
    gateway?.releaseAll();
    gateway = undefined;
    await cluster.close();
  });

  /**
   * Deploys {@link sourceToCount} in `order` (the task named `refuse` refused); fails when the
   * deployment does not complete.
   */
  async function deployConcurrently(
    order: DeploymentOrder,
    log: string[],
    refuse?: string,
    configuration?: Configuration,
  ): Promise<JobExecution> {
    gateway = answeringOnceAllOfAVertexArrived(executor, PARALLELISM, log, refuse);
    const held = gateway;
    let execution: JobExecution | undefined;
    void deployer
      .deploy(sourceToCount(PARALLELISM), () => held, {
        order,
        ...(configuration === undefined ? {} : { configuration }),
      })
      .then((deployed) => {
        execution = deployed;
      });
    await waitFor(() => execution !== undefined, {
      what: "a deployment whose submits answer only once all of a vertex's arrived (submits awaited one by one never get there)",
      timeoutMs: DEPLOY_TIMEOUT_MS,
    });
    return execution as JobExecution;
  }

  it("submits every subtask of a vertex without waiting for the others' answers, producers' answers before the first consumer's submit", async () => {
    const log: string[] = [];
    const execution = await deployConcurrently("producers-first", log);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Count")?.reduce((a, b) => (a as number) + (b as number), 0)).toBe(
      PARALLELISM * RECORDS,
    );
    const sourceAnswers = positions(log, "answered Source");
    const countSubmits = positions(log, "submit Count");
    expect(sourceAnswers).toHaveLength(PARALLELISM);
    expect(countSubmits).toHaveLength(PARALLELISM);
    // The consumers' partition requests find every producer's partition: none waits for a retry.
    expect(Math.min(...countSubmits)).toBeGreaterThan(Math.max(...sourceAnswers));
  });

  it("deploys every consumer before its producers with consumers-first, each vertex's subtasks together", async () => {
    const log: string[] = [];
    const execution = await deployConcurrently("consumers-first", log);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    const countAnswers = positions(log, "answered Count");
    const sourceSubmits = positions(log, "submit Source");
    expect(countAnswers).toHaveLength(PARALLELISM);
    expect(Math.min(...sourceSubmits)).toBeGreaterThan(Math.max(...countAnswers));
  });

  it("fails the job when one submit of a vertex submitted together fails, and cancels the others deployed meanwhile", async () => {
    const log: string[] = [];
    const execution = await deployConcurrently("producers-first", log, "Count (2/4)#0");
    const result = await execution.terminated;
    expect(result.status).toBe("FAILED");
    expect(result.error?.message).toBe("the task manager refuses Count (2/4)#0");
    expect(result.failedTask).toBe("Count (2/4)#0");
    // The other consumers were submitted with it and deployed, then canceled; every buffer is
    // back (the cluster's close checks the pools).
    expect(positions(log, "answered Count")).toHaveLength(PARALLELISM - 1);
    const counts = execution.executionVertices.filter((e) => e.vertex.name === "Count");
    expect(counts.map((e) => e.state)).toEqual(["CANCELED", "FAILED", "CANCELED", "CANCELED"]);
    expect(executor.runningTasks).toHaveLength(0);
  });

  it("fails over the region when one submit of a wave fails, and runs every subtask of it again", async () => {
    const log: string[] = [];
    const restarting = localConfiguration({
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 1,
      "restart-strategy.fixed-delay.delay": "0ms",
    });
    const execution = await deployConcurrently("producers-first", log, "Count (2/4)#0", restarting);
    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    // One pipelined region (ALL_TO_ALL): every subtask re-runs, each as attempt 1.
    expect(result.rerunTasks).toHaveLength(2 * PARALLELISM);
    expect(positions(log, "answered Count (2/4)#1")).toHaveLength(1);
    expect(result.results.get("Count")?.reduce((a, b) => (a as number) + (b as number), 0)).toBe(
      PARALLELISM * RECORDS,
    );
  });
});
