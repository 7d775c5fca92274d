/**
 * A shuffle worker restarted on the same ports in the middle of a job, run through the runtime as
 * an application runs it: the JobDeployer with this plugin's ShuffleMaster, two TaskExecutors,
 * and a worker whose second start is a new incarnation without the first one's partitions.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { deferred } from "@sluice/core";
import {
  Configuration,
  JobDeployer,
  JobGraph,
  type Task,
  TaskExecutor,
  type TaskInvokable,
} from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { RemoteShuffleMaster } from "./remote-shuffle-master.js";
import { ShuffleWorker } from "./shuffle-worker.js";
import { REMOTE_PLUGIN } from "./test-support/plugin.js";
import { TEST_SETTINGS, waitFor } from "./test-support/remote-shuffle-harness.js";

const RECORDS = 50_000;
const closers: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

describe("a shuffle worker restarted mid-job", () => {
  it("is a new incarnation: the job re-runs the producer of the partition the first start held, and verifies", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-remote-restart-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const configuration = new Configuration({
      ...TEST_SETTINGS,
      "shuffle-service-factory.class": REMOTE_PLUGIN,
      "taskmanager.host": "127.0.0.1",
      "taskmanager.data.bind-host": "127.0.0.1",
      "restart-strategy.type": "fixed-delay",
      "restart-strategy.fixed-delay.attempts": 3,
      "restart-strategy.fixed-delay.delay": "200ms",
    });
    const deployer = await JobDeployer.start(configuration);
    closers.push(() => deployer.close());
    const master = deployer.master as unknown as RemoteShuffleMaster;
    const workerConfig = (ports: { rpc: number; data: number }) =>
      new Configuration({
        ...TEST_SETTINGS,
        "remote-shuffle.manager.rpc-port": master.managerPort,
        "remote-shuffle.worker.rpc-port": ports.rpc,
        "remote-shuffle.worker.data-port": ports.data,
        "io.tmp.dirs": dir,
      });
    const first = await ShuffleWorker.start(workerConfig({ rpc: 0, data: 0 }));
    let second: ShuffleWorker | undefined;
    closers.push(async () => {
      await first.close();
      await second?.close();
    });
    await waitFor(() => master.liveWorkers().length === 1, "the first start's registration");

    // The consumer's first attempt waits until the worker was restarted; a re-run does not.
    const restarted = deferred<void>();
    let consumerAttempts = 0;
    let producerAttempts = 0;
    const invokables: Record<string, TaskInvokable<Task>> = {
      produce: async (task) => {
        producerAttempts++;
        const writer = task.writer<number>();
        for (let i = 0; i < RECORDS; i++) {
          if (!writer.isAvailable()) await writer.getAvailableFuture();
          writer.emit(i);
        }
      },
      consume: async (task) => {
        if (consumerAttempts++ === 0) await restarted.promise;
        let sum = 0;
        for await (const value of task.reader<number>()) sum += value;
        return sum;
      },
    };
    const producerSide = await TaskExecutor.start(configuration, { invokables });
    const consumerSide = await TaskExecutor.start(configuration, { invokables });
    closers.push(() => Promise.all([producerSide.close(), consumerSide.close()]).then(() => {}));

    const graph = new JobGraph("restarted worker");
    const produce = graph.addVertex({ name: "Produce", parallelism: 1, invokable: "produce" });
    const consume = graph.addVertex({ name: "Consume", parallelism: 1, invokable: "consume" });
    graph.connect(produce, consume, {
      partitioner: { name: "FORWARD" },
      serializer: "int32",
      partitionType: ResultPartitionType.BLOCKING,
    });
    const execution = await deployer.deploy(graph, (vertex) =>
      vertex === produce ? producerSide : consumerSide,
    );
    // The partition is stored; the consumer waits.
    await waitFor(
      () => first.storedPartitions().length === 1 && consumerAttempts === 1,
      "the push",
    );
    const { rpcPort, dataPort } = first.address;
    await first.close();
    second = await ShuffleWorker.start(workerConfig({ rpc: rpcPort, data: dataPort }));
    expect(second.address.incarnation).not.toBe(first.address.incarnation);
    await waitFor(
      () => master.liveWorkers().some((w) => w.incarnation === second?.address.incarnation),
      "the second start's registration",
    );
    restarted.resolve();

    const result = await execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Consume")).toEqual([(RECORDS * (RECORDS - 1)) / 2]);
    // The producer ran again, into the second start.
    expect(producerAttempts).toBe(2);
    expect(result.rerunTasks).toContain("Produce (1/1)");
    // Released at the job's end, on the second start.
    const last = second;
    await waitFor(() => last.storedPartitions().length === 0, "the release on the second start");
  }, 90_000);
});
