/**
 * Partitions a job cannot trust, run through the runtime as an application runs it: the
 * JobDeployer with this plugin's ShuffleMaster, two TaskExecutors and real worker processes'
 * code. A worker restarted on the same ports is a new incarnation without the first one's
 * partitions; a stored byte that changed fails the checksum; a stored file that was deleted
 * cannot be read. Each way the job re-runs the producer and verifies.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { deferred, ErrorCodes } from "@sluice/core";
import {
  Configuration,
  JobDeployer,
  type JobExecution,
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
import { filesOf, TEST_SETTINGS, waitFor } from "./test-support/remote-shuffle-harness.js";

const RECORDS = 50_000;
const closers: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

/**
 * A producer → consumer BLOCKING job on the remote shuffle; the consumer's first attempt waits.
 * `whileWriting` runs in the producer's first attempt once it emitted 40,000 of its records
 * (more than the worker's sort buffer holds, so the partition's files exist by then).
 */
async function startJob(dir: string, whileWriting?: (worker: ShuffleWorker) => Promise<void>) {
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
  const worker = await ShuffleWorker.start(workerConfig({ rpc: 0, data: 0 }));
  const workers = [worker];
  closers.push(async () => {
    for (const w of workers) await w.close();
  });
  await waitFor(() => master.liveWorkers().length === 1, "the first start's registration");

  // The consumer's first attempt waits until the test is done with the stored partition; a
  // re-run does not.
  const release = deferred<void>();
  const attempts = { producer: 0, consumer: 0 };
  const consumerErrors: unknown[] = [];
  const invokables: Record<string, TaskInvokable<Task>> = {
    produce: async (task) => {
      const attempt = ++attempts.producer;
      const writer = task.writer<number>();
      for (let i = 0; i < RECORDS; i++) {
        if (i === 40_000 && attempt === 1) await whileWriting?.(worker);
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        writer.emit(i);
      }
    },
    consume: async (task) => {
      if (attempts.consumer++ === 0) await release.promise;
      let sum = 0;
      try {
        for await (const value of task.reader<number>()) sum += value;
      } catch (error) {
        consumerErrors.push(error);
        throw error;
      }
      return sum;
    },
  };
  const producerSide = await TaskExecutor.start(configuration, { invokables });
  const consumerSide = await TaskExecutor.start(configuration, { invokables });
  closers.push(() => Promise.all([producerSide.close(), consumerSide.close()]).then(() => {}));

  const graph = new JobGraph("remote shuffle job");
  const produce = graph.addVertex({ name: "Produce", parallelism: 1, invokable: "produce" });
  const consume = graph.addVertex({ name: "Consume", parallelism: 1, invokable: "consume" });
  graph.connect(produce, consume, {
    partitioner: { name: "FORWARD" },
    serializer: "int32",
    partitionType: ResultPartitionType.BLOCKING,
  });
  const execution: JobExecution = await deployer.deploy(graph, (vertex) =>
    vertex === produce ? producerSide : consumerSide,
  );
  // The partition is stored; the consumer waits.
  await waitFor(
    () => worker.storedPartitions().length === 1 && attempts.consumer === 1,
    "the push",
  );
  return { master, worker, workers, workerConfig, release, attempts, consumerErrors, execution };
}

describe("a job on the remote shuffle", () => {
  it("a shuffle worker restarted mid-job is a new incarnation: the job re-runs the producer of the partition the first start held, and verifies", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-remote-restart-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const job = await startJob(dir);
    const first = job.worker;
    const { rpcPort, dataPort } = first.address;
    await first.close();
    const second = await ShuffleWorker.start(job.workerConfig({ rpc: rpcPort, data: dataPort }));
    job.workers.push(second);
    expect(second.address.incarnation).not.toBe(first.address.incarnation);
    await waitFor(
      () => job.master.liveWorkers().some((w) => w.incarnation === second.address.incarnation),
      "the second start's registration",
    );
    job.release.resolve();

    const result = await job.execution.terminated;
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Consume")).toEqual([(RECORDS * (RECORDS - 1)) / 2]);
    // The producer ran again, into the second start.
    expect(job.attempts.producer).toBe(2);
    expect(result.rerunTasks).toContain("Produce (1/1)");
    // Released at the job's end, on the second start.
    await waitFor(() => second.storedPartitions().length === 0, "the release on the second start");
  }, 90_000);

  it("a stored byte that changed fails the consumer with the integrity error, and the job re-runs the producer and verifies", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-remote-corrupt-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    const job = await startJob(dir);
    // The record 40000 (int32 payload behind its length 4), its value changed to 40001: the
    // file's layout stays valid, only the subpartition's checksum can tell.
    const record = Buffer.from([0, 0, 0, 4, 0, 0, 0x9c, 0x40]);
    const hits = filesOf(job.worker)
      .map((file) => ({ file, bytes: readFileSync(file) }))
      .filter(({ bytes }) => bytes.indexOf(record) >= 0);
    expect(hits).toHaveLength(1);
    const [hit] = hits as [{ file: string; bytes: Buffer }];
    hit.bytes[hit.bytes.indexOf(record) + 7] = 0x41;
    writeFileSync(hit.file, hit.bytes);
    job.release.resolve();

    const result = await job.execution.terminated;
    expect(job.consumerErrors).toHaveLength(1);
    expect(job.consumerErrors[0]).toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Consume")).toEqual([(RECORDS * (RECORDS - 1)) / 2]);
    // The corrupted partition was produced again, not read again.
    expect(job.attempts.producer).toBe(2);
    expect(result.rerunTasks).toEqual(["Produce (1/1)", "Consume (1/1)"]);
  }, 90_000);

  it("a stored file that was deleted fails the consumer with the coded partition-file error, and the job re-runs the producer and verifies", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-remote-deleted-"));
    closers.push(() => rmSync(dir, { recursive: true, force: true }));
    // Deleted while the worker still writes them: the partition is stored completely (into
    // files nobody can open any more), and no reader can have opened them before.
    const job = await startJob(dir, async (worker) => {
      await waitFor(() => filesOf(worker).length === 2, "the partition's files");
      for (const file of filesOf(worker)) rmSync(file);
    });
    expect(filesOf(job.worker)).toEqual([]);
    job.release.resolve();

    const result = await job.execution.terminated;
    expect(job.consumerErrors).toHaveLength(1);
    expect(job.consumerErrors[0]).toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
    expect(result.error).toBeUndefined();
    expect(result.status).toBe("FINISHED");
    expect(result.results.get("Consume")).toEqual([(RECORDS * (RECORDS - 1)) / 2]);
    expect(job.attempts.producer).toBe(2);
    expect(result.rerunTasks).toEqual(["Produce (1/1)", "Consume (1/1)"]);
  }, 90_000);
});
