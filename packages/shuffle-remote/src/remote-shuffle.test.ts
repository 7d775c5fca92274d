import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { ErrorCodes, isPartitionException } from "@sluice/core";
import { blockEventLoop } from "@sluice/core/testing";
import {
  createResultPartitionDeploymentDescriptor,
  ResultPartitionType,
} from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import {
  filesOf,
  partitionDescriptor,
  RemoteShuffleHarness,
  readPartition,
  recordsOf,
  register,
  waitFor,
  writePartition,
} from "./test-support/remote-shuffle-harness.js";

let harness: RemoteShuffleHarness | undefined;

/** The error `promise` rejects with; fails when it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error("expected a rejection");
}

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

describe("remote shuffle", () => {
  it("stores a partition pushed by a producer on a worker and serves it to a consumer in another environment", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const producerSide = await harness.startEnvironment();
    const consumerSide = await harness.startEnvironment();
    const partition = partitionDescriptor(2);
    const descriptor = await register(harness, partition);
    expect(descriptor.storesLocalResourcesOn).toBeUndefined();
    expect(descriptor.plugin.worker).toEqual(worker.address);
    const records = [recordsOf(0, 5_000), recordsOf(1, 3_000)];
    await writePartition(producerSide, partition, descriptor, records);
    expect(worker.storedPartitions().map((p) => p.partitionId.toString())).toEqual([
      descriptor.resultPartitionId.toString(),
    ]);
    const read = await readPartition(consumerSide, partition, descriptor, 2);
    expect(read).toEqual(records.map((r) => Buffer.concat(r)));
    // Released by the job side: the worker deletes its files.
    harness.master.releasePartitionExternally(descriptor);
    await waitFor(() => worker.storedPartitions().length === 0, "the release");
    await waitFor(() => filesOf(worker).length === 0, "the files' deletion");
  }, 60_000);

  it("spreads partitions over the workers by load, registered one by one or at once", async () => {
    harness = await RemoteShuffleHarness.start();
    const first = await harness.startWorker();
    const second = await harness.startWorker();
    const assigned = [];
    for (let i = 0; i < 2; i++) assigned.push(await register(harness, partitionDescriptor(1)));
    // The subtasks of a vertex are deployed at once: registrations that overlap spread too.
    assigned.push(
      ...(await Promise.all(
        [0, 1].map(() => register(harness as RemoteShuffleHarness, partitionDescriptor(1))),
      )),
    );
    const incarnations = assigned.map((d) => d.plugin.worker.incarnation);
    expect(incarnations.filter((i) => i === first.address.incarnation)).toHaveLength(2);
    expect(incarnations.filter((i) => i === second.address.incarnation)).toHaveLength(2);
  }, 30_000);

  it("bounds what a producer holds by remote-shuffle.job.memory-per-partition until its worker returns credit", async () => {
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.job.memory-per-partition": "64kb",
    });
    await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const [writer] = environment.createResultPartitionWriters(
      environment.createShuffleIOOwnerContext("Producer", descriptor.resultPartitionId.producerId),
      [createResultPartitionDeploymentDescriptor(partition, descriptor, 128)],
    );
    if (writer === undefined) throw new Error("no writer");
    writer.setup();
    // Before the worker granted any credit, the writer takes what its memory allows, then stops.
    const records = recordsOf(0, 10_000);
    let emitted = 0;
    while (writer.isAvailable()) writer.emitRecord(records[emitted++] as Buffer, 0);
    const bytes = emitted * (records[0] as Buffer).byteLength;
    expect(bytes).toBeGreaterThanOrEqual(64 * 1024);
    expect(bytes).toBeLessThan(64 * 1024 + (records[0] as Buffer).byteLength + 1);
    // The worker's credit lets the rest through.
    while (emitted < records.length) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      expect(writer.getFailureCause()).toBeUndefined();
      writer.emitRecord(records[emitted++] as Buffer, 0);
    }
    writer.finish();
    while (!writer.isAvailable()) await writer.getAvailableFuture();
    expect(writer.getFailureCause()).toBeUndefined();
    expect(writer.isStored()).toBe(true);
    writer.close();
  }, 60_000);

  it("never delivers a stored byte that changed: the consumer fails with SLUICE_ERR_PARTITION_FILE_CORRUPTED naming partition and worker before the damaged record reaches it", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(2);
    const descriptor = await register(harness, partition);
    const records = [recordsOf(0, 2_000), recordsOf(1, 2_000)];
    await writePartition(environment, partition, descriptor, records);
    // One byte of a record's padding, far from any header: the file's layout stays valid.
    const [data] = filesOf(worker)
      .map((file) => ({ file, bytes: readFileSync(file) }))
      .sort((a, b) => b.bytes.byteLength - a.bytes.byteLength);
    if (data === undefined) throw new Error("no partition file");
    const at = data.bytes.indexOf(Buffer.alloc(32, 0xaa), Math.floor(data.bytes.byteLength / 2));
    expect(at).toBeGreaterThan(0);
    data.bytes[at + 16] = 0x55;
    writeFileSync(data.file, data.bytes);
    const delivered: Buffer[][] = [[], []];
    const read = readPartition(environment, partition, descriptor, 2, { delivered });
    await expect(read).rejects.toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
    const error = await rejectionOf(read);
    // Whatever reached the consumer is what the producer wrote: the damage never left the worker.
    for (const [s, chunks] of delivered.entries()) {
      const got = Buffer.concat(chunks);
      const written = Buffer.concat(records[s] ?? []);
      expect(got.equals(written.subarray(0, got.byteLength)), `subpartition ${s}`).toBe(true);
    }
    // A partition exception: the job side knows which producer must run again.
    expect(isPartitionException(error)).toBe(true);
    expect(String((error as { partitionId?: unknown }).partitionId)).toBe(
      descriptor.resultPartitionId.toString(),
    );
    expect(error.message).toContain(descriptor.resultPartitionId.toString());
    expect(error.message).toContain(`${worker.address.host}:${worker.address.rpcPort}`);
    expect(error.message).toContain(worker.address.incarnation);
  }, 60_000);

  it("fails the consumer with SLUICE_ERR_PARTITION_FILE_CORRUPTED, a partition exception, when a stored file was deleted", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await writePartition(environment, partition, descriptor, [recordsOf(0, 2_000)]);
    const files = filesOf(worker);
    expect(files).toHaveLength(2);
    for (const file of files) rmSync(file);
    const read = readPartition(environment, partition, descriptor, 1);
    await expect(read).rejects.toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
    const error = await rejectionOf(read);
    expect(isPartitionException(error)).toBe(true);
    expect(String((error as { partitionId?: unknown }).partitionId)).toBe(
      descriptor.resultPartitionId.toString(),
    );
    expect(error.message).toMatch(/ENOENT/);
    expect(error.message).toContain(`${worker.address.host}:${worker.address.rpcPort}`);
  }, 60_000);

  it("refuses a stale incarnation: a worker restarted on the same ports never serves a partition as the one that stored it", async () => {
    harness = await RemoteShuffleHarness.start();
    const before = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await writePartition(environment, partition, descriptor, [recordsOf(0, 1_000)]);
    // The worker restarts on the same ports: a new incarnation, without the old one's data.
    await before.close();
    const after = await harness.startWorker({
      "remote-shuffle.worker.rpc-port": before.address.rpcPort,
      "remote-shuffle.worker.data-port": before.address.dataPort,
    });
    expect(after.address.incarnation).not.toBe(before.address.incarnation);
    // The new start holds other data under the same partition id (half of it, say).
    const impostor = await register(harness, partition, descriptor.resultPartitionId.producerId);
    expect(impostor.plugin.worker).toEqual(after.address);
    await writePartition(environment, partition, impostor, [recordsOf(0, 500)]);
    // A consumer with the descriptor of the first start must not take that for the partition.
    const read = readPartition(environment, partition, descriptor, 1);
    await expect(read).rejects.toMatchObject({ code: ErrorCodes.PARTITION_NOT_FOUND });
    const error = await rejectionOf(read);
    // A partition exception: the job side knows which producer must run again.
    expect(isPartitionException(error)).toBe(true);
    expect(String((error as { partitionId?: unknown }).partitionId)).toBe(
      descriptor.resultPartitionId.toString(),
    );
    expect(error.message).toContain(descriptor.resultPartitionId.toString());
    expect(error.message).toContain(before.address.incarnation);
    // The worker never tells a peer which start it is: half of what a forged push would need.
    expect(error.message).not.toContain(after.address.incarnation);
  }, 60_000);

  it("refuses a push for an earlier incarnation of the worker", async () => {
    harness = await RemoteShuffleHarness.start();
    const before = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await before.close();
    await harness.startWorker({
      "remote-shuffle.worker.rpc-port": before.address.rpcPort,
      "remote-shuffle.worker.data-port": before.address.dataPort,
    });
    await expect(
      writePartition(environment, partition, descriptor, [recordsOf(0, 10)]),
    ).rejects.toMatchObject({ code: ErrorCodes.PARTITION_NOT_FOUND });
  }, 60_000);

  it("reports a lost worker's partitions to their job once its grace window ended", async () => {
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.worker.max-recovery-time": "300ms",
    });
    const worker = await harness.startWorker();
    const first = await register(harness, partitionDescriptor(1));
    const second = await register(harness, partitionDescriptor(1));
    const lostAt = Date.now();
    await worker.close();
    await waitFor(() => harness?.lost.length === 1, "the report of the lost partitions");
    expect(Date.now() - lostAt).toBeGreaterThanOrEqual(250);
    expect(harness.lost[0]?.map(String).sort()).toEqual(
      [first.resultPartitionId.toString(), second.resultPartitionId.toString()].sort(),
    );
    expect(harness.master.liveWorkers()).toEqual([]);
  }, 30_000);

  it("reports a worker's partitions at once when it comes back as a new incarnation", async () => {
    harness = await RemoteShuffleHarness.start();
    const before = await harness.startWorker();
    const partition = await register(harness, partitionDescriptor(1));
    await before.close();
    await harness.startWorker({
      "remote-shuffle.worker.rpc-port": before.address.rpcPort,
      "remote-shuffle.worker.data-port": before.address.dataPort,
    });
    // Within the default grace window of 3 minutes: the new incarnation ends it.
    await waitFor(() => harness?.lost.length === 1, "the report of the lost partition");
    expect(harness.lost[0]?.map(String)).toEqual([partition.resultPartitionId.toString()]);
  }, 30_000);

  it("refuses pipelined partition types with SLUICE_ERR_CONFIG, on the master and in the environment", async () => {
    harness = await RemoteShuffleHarness.start();
    await harness.startWorker();
    const environment = await harness.startEnvironment();
    const pipelined = partitionDescriptor(1, ResultPartitionType.PIPELINED_BOUNDED);
    await expect(register(harness, pipelined)).rejects.toMatchObject({
      code: ErrorCodes.CONFIG,
      message: expect.stringContaining("PIPELINED_BOUNDED"),
    });
    const blocking = partitionDescriptor(1);
    const descriptor = await register(harness, blocking);
    expect(() =>
      environment.createResultPartitionWriters(
        environment.createShuffleIOOwnerContext(
          "Producer",
          descriptor.resultPartitionId.producerId,
        ),
        [
          createResultPartitionDeploymentDescriptor(
            { ...blocking, partitionType: ResultPartitionType.PIPELINED },
            descriptor,
            128,
          ),
        ],
      ),
    ).toThrow(expect.objectContaining({ code: ErrorCodes.CONFIG }));
  }, 30_000);

  it("fails a consumer whose shuffle worker process was killed mid-read with an error naming the partition, and reports the worker's partitions lost", async () => {
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.manager.embedded-workers": 1,
      "remote-shuffle.worker.max-recovery-time": "300ms",
    });
    const [embedded] = harness.master.embeddedWorkerProcesses();
    if (embedded === undefined) throw new Error("no embedded worker");
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await writePartition(environment, partition, descriptor, [recordsOf(0, 20_000)]);
    const read = readPartition(environment, partition, descriptor, 1, {
      afterFirstBuffer: async () => {
        // The worker sends no more than the consumer's credit: the rest is still on the worker.
        embedded.child.kill("SIGKILL");
        await embedded.exited;
      },
    });
    const error = await rejectionOf(read);
    // A partition exception: the job side knows which producer must run again.
    expect(isPartitionException(error)).toBe(true);
    expect(String((error as { partitionId?: unknown }).partitionId)).toBe(
      descriptor.resultPartitionId.toString(),
    );
    expect(error).toMatchObject({ code: ErrorCodes.PARTITION_CONNECTION });
    expect(error.message).toContain(descriptor.resultPartitionId.toString());
    // Its grace window ends without it: the job side hears that the partition is lost.
    await waitFor(() => harness?.lost.length === 1, "the report of the lost partition");
    expect(harness.lost[0]?.map(String)).toEqual([descriptor.resultPartitionId.toString()]);
  }, 60_000);

  it("re-associates a worker that registers again with the same incarnation within its grace window: its partitions are not reported", async () => {
    // Heartbeats far apart, a short timeout: the manager drops the worker again and again, and
    // the worker registers again each time, within its grace window.
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.worker.heartbeat-timeout": "300ms",
      "remote-shuffle.worker.max-recovery-time": "2s",
    });
    const registrations: string[] = [];
    harness.master.onWorkerRegistered((worker) => registrations.push(worker.address.incarnation));
    const worker = await harness.startWorker({ "remote-shuffle.worker.heartbeat-interval": "1h" });
    const partition = await register(harness, partitionDescriptor(1));
    await waitFor(
      () => registrations.length >= 3,
      "the worker's registrations after being dropped",
    );
    // Longer than the grace window since the first drop: re-associated each time, not lost.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(harness.lost).toEqual([]);
    expect(new Set(registrations)).toEqual(new Set([worker.address.incarnation]));
    const [known] = harness.master.registeredWorkers();
    expect(known?.partitions).toBe(1);
    harness.master.releasePartitionExternally(partition);
  }, 30_000);

  it("keeps a worker whose heartbeats arrived while the manager's event loop was blocked past remote-shuffle.worker.heartbeat-timeout", async () => {
    const timeoutMs = 1_000;
    // The worker is a process of its own: it goes on sending heartbeats (every 100 ms) while the
    // manager's event loop is blocked.
    harness = await RemoteShuffleHarness.start({
      "remote-shuffle.manager.embedded-workers": 1,
      "remote-shuffle.worker.heartbeat-timeout": `${timeoutMs}ms`,
    });
    const registrations: string[] = [];
    harness.master.onWorkerRegistered((worker) => registrations.push(worker.address.incarnation));
    expect(harness.master.liveWorkers()).toHaveLength(1);
    // When the loop turns again, the heartbeat check is due before the socket is read.
    blockEventLoop(3 * timeoutMs);
    // A dropped worker would register again after its reconnect delay (500 ms).
    await new Promise((resolve) => setTimeout(resolve, 2 * timeoutMs));
    expect(registrations).toEqual([]);
    expect(harness.master.liveWorkers()).toHaveLength(1);
  }, 30_000);
});
