import { mkdtempSync, readdirSync, rmSync, statSync, truncateSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ErrorCodes,
  frameRecord,
  isPartitionException,
  isSluiceError,
  type PartitionException,
  type RecordHolder,
  SpillingAdaptiveSpanningRecordDeserializer,
} from "@sluice/core";
import { must } from "@sluice/core/testing";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { SingleInputGate } from "../consumer/single-input-gate.js";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "../environment/network-shuffle-service-factory.js";
import {
  type AllToAllJob,
  consumeAll,
  deployAllToAll,
  deployConsumers,
  environmentContext,
  produce,
  type RawConfig,
  requestPartitions,
} from "../test-support/shuffle-fixture.js";
import { PartitionedFileWriter } from "./partitioned-file-writer.js";
import type { SortMergeResultPartition } from "./sort-merge-result-partition.js";

const MB = 1024 * 1024;

describe("SortMergeResultPartition in one worker (local channels)", () => {
  let dirs: string[];
  let config: RawConfig;
  const envs: NetworkShuffleEnvironment[] = [];

  beforeEach(() => {
    dirs = [0, 1].map(() => mkdtempSync(join(tmpdir(), "sluice-sort-merge-")));
    config = {
      "taskmanager.memory.network.min": "1mb",
      "taskmanager.memory.segment-size": "4kb",
      "taskmanager.network.sort-shuffle.min-buffers": 32,
      "taskmanager.memory.framework.off-heap.batch-shuffle.size": "512kb",
      "taskmanager.network.request-backoff.initial": "5ms",
      "taskmanager.network.request-backoff.max": "2s",
      "io.tmp.dirs": dirs.join(","),
    };
  });

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  async function start(overrides: RawConfig = {}): Promise<NetworkShuffleEnvironment> {
    const env = new LocalShuffleServiceFactory().createShuffleEnvironment(
      environmentContext({ ...config, ...overrides }),
    );
    envs.push(env);
    await env.start();
    return env;
  }

  async function deploy(
    env: NetworkShuffleEnvironment,
    producers = 2,
    consumers = 3,
  ): Promise<AllToAllJob> {
    const job = await deployAllToAll(
      env,
      env,
      producers,
      consumers,
      config,
      ResultPartitionType.BLOCKING,
    );
    for (const writer of job.writers) writer.setup();
    return job;
  }

  function sortMerge(job: AllToAllJob, p = 0): SortMergeResultPartition {
    return job.writers[p] as SortMergeResultPartition;
  }

  async function closeGates(gates: readonly SingleInputGate[]): Promise<void> {
    for (const gate of gates) await gate.close();
  }

  /** Every pool of `env` is full again (the writer side closed, every reader gone). */
  async function expectPoolsFull(env: NetworkShuffleEnvironment): Promise<void> {
    const pool = env.networkBufferPool;
    await expect
      .poll(() => pool.getNumberOfAvailableMemorySegments())
      .toBe(pool.totalNumberOfMemorySegments);
    const read = env.getReadBufferPoolUsage();
    if (read !== undefined)
      await expect
        .poll(() => env.getReadBufferPoolUsage())
        .toEqual({ available: read.total, total: read.total });
  }

  // 32 segments: 3 subpartitions fill segments of their own (a hash-based buffer), 5 sort.
  it.each([
    [3, "filled per subpartition"],
    [5, "sorted"],
  ])(
    "writes four times its worker's network memory through a bounded pool, and consumers read every record after it finished (%i subpartitions, %s)",
    async (consumers) => {
      const env = await start();
      const job = await deploy(env, 2, consumers);
      const pool = env.networkBufferPool;
      const perPartitionMax = Math.max(32, 4 * consumers);
      let maxUsed = 0;
      const watch = setInterval(() => {
        maxUsed = Math.max(maxUsed, pool.getNumberOfUsedMemorySegments());
      }, 1);
      const records = 8_000;
      try {
        await Promise.all(
          job.writers.map(async (writer, p) => {
            await produce(writer, p, records, 150);
            maxUsed = Math.max(maxUsed, pool.getNumberOfUsedMemorySegments());
          }),
        );
      } finally {
        clearInterval(watch);
      }
      let written = 0;
      for (const writer of job.writers) written += writer.metrics.numBytesOut;
      expect(written).toBeGreaterThan(4 * MB);
      expect(maxUsed).toBeLessThanOrEqual(2 * perPartitionMax);
      for (const writer of job.writers) writer.close();
      const checkers = await consumeAll(job.gates, 2);
      for (const checker of checkers) expect(checker.nextSeq).toEqual([records, records]);
      await closeGates(job.gates);
      await expectPoolsFull(env);
      // Compressed on disk (LZ4 by default): the padding compresses well.
      const stats = sortMerge(job).getStatistics();
      expect(stats?.bytesAfterCompression).toBeLessThan((stats?.bytesBeforeCompression ?? 0) / 2);
    },
  );

  it("serves its subpartitions any number of times: again after a first read, and to two readers at once", async () => {
    const env = await start();
    const job = await deploy(env);
    await Promise.all(job.writers.map((writer, p) => produce(writer, p, 2_000, 20)));
    for (const writer of job.writers) writer.close();
    const first = await consumeAll(job.gates, 2);
    await closeGates(job.gates);
    const second = deployConsumers(env, job, 3);
    const third = deployConsumers(env, job, 3);
    const [again, concurrent] = await Promise.all([consumeAll(second, 2), consumeAll(third, 2)]);
    for (const checker of [...first, ...again, ...concurrent]) {
      expect(checker.nextSeq).toEqual([2_000, 2_000]);
    }
    await closeGates([...second, ...third]);
    await expectPoolsFull(env);
  });

  it("keeps its files until releasePartitionsLocally deletes them, reporting them as local resources until then", async () => {
    const env = await start();
    const job = await deploy(env, 1, 2);
    await produce(sortMerge(job), 0, 500, 10);
    sortMerge(job).close();
    const paths = sortMerge(job).getFilePaths();
    if (paths === undefined) throw new Error("no files");
    const ids = env.getPartitionsOccupyingLocalResources().map(String);
    expect(ids).toEqual([sortMerge(job).partitionId.toString()]);
    await consumeAll(job.gates, 1);
    await closeGates(job.gates);
    // Consumed, but blocking partitions are not released by consumption.
    expect(statSync(paths.dataFile).size).toBeGreaterThan(0);
    expect(env.getPartitionsOccupyingLocalResources()).toHaveLength(1);
    env.releasePartitionsLocally([sortMerge(job).partitionId]);
    expect(env.getPartitionsOccupyingLocalResources()).toEqual([]);
    await expect.poll(() => readdirSync(join(paths.dataFile, ".."))).toEqual([]);
    // A late reader is told at once that the partition is not found, naming it.
    const late = deployConsumers(env, job, 1);
    requestPartitions(late);
    let failure: unknown;
    await expect
      .poll(() => {
        try {
          late[0]?.pollNext();
          return undefined;
        } catch (error) {
          failure = error;
          return (error as { code?: string }).code;
        }
      })
      .toBe(ErrorCodes.PARTITION_NOT_FOUND);
    expect(isPartitionException(failure)).toBe(true);
    expect((failure as PartitionException).partitionId.equals(sortMerge(job).partitionId)).toBe(
      true,
    );
    await closeGates(late);
    await expectPoolsFull(env);
  });

  it("deletes its files and the worker's folders when the environment closes", async () => {
    const env = await start();
    const job = await deploy(env, 2, 2);
    await Promise.all(job.writers.map((writer, p) => produce(writer, p, 300, 10)));
    const folders = [...env.fileChannelManager.getFolders()];
    expect(folders).toHaveLength(2);
    for (const folder of folders) expect(readdirSync(folder).length).toBeGreaterThan(0);
    await env.close();
    for (const folder of folders) expect(() => statSync(folder)).toThrow(/ENOENT/);
  });

  it("writes owner-only files into an unguessable, owner-only folder in each io.tmp.dirs entry, spreading partitions over them", async () => {
    const env = await start();
    const job = await deploy(env, 2, 2);
    await Promise.all(job.writers.map((writer, p) => produce(writer, p, 10, 10)));
    const folders = env.fileChannelManager.getFolders();
    expect(folders.map((folder) => join(folder, ".."))).toEqual(dirs);
    for (const folder of folders) {
      expect(folder).toMatch(/sluice-netty-shuffle-[A-Za-z0-9]{6}$/);
      expect(statSync(folder).mode & 0o777).toBe(0o700);
    }
    const used = job.writers.map((writer) =>
      join((writer as SortMergeResultPartition).getFilePaths()?.dataFile ?? "", ".."),
    );
    expect(new Set(used).size).toBe(2);
    for (const writer of job.writers) {
      const paths = (writer as SortMergeResultPartition).getFilePaths();
      for (const path of [paths?.dataFile, paths?.indexFile]) {
        expect(statSync(path as string).mode & 0o777).toBe(0o600);
      }
    }
  });

  it("lets a consumer that asked before its producer finished read the data once it finished", async () => {
    const env = await start();
    const job = await deploy(env, 1, 2);
    const consuming = consumeAll(job.gates, 1);
    await new Promise((resolve) => setImmediate(resolve));
    await produce(sortMerge(job), 0, 1_000, 10);
    for (const checker of await consuming) expect(checker.nextSeq).toEqual([1_000]);
    await closeGates(job.gates);
  });

  it("numbers what each reader hands out across the int32 wrap-around, from 2^31 - 1 to -2^31", async () => {
    const start31 = 2 ** 31 - 3;
    const env = await start({ "taskmanager.network.initial-sequence-number": start31 });
    const job = await deploy(env, 1, 2);
    await produce(sortMerge(job), 0, 1_000, 40);
    for (const writer of job.writers) writer.close();
    const view = sortMerge(job).createSubpartitionView(1, { notifyDataAvailable: () => {} });
    const numbers: number[] = [];
    let ended = false;
    while (!ended) {
      // The read scheduler fills the view's queue from the file asynchronously.
      await expect
        .poll(() => view.getAvailabilityAndBacklog(1).isAvailable, { timeout: 30_000 })
        .toBe(true);
      for (let next = view.getNextBuffer(); next !== undefined; next = view.getNextBuffer()) {
        numbers.push(next.sequenceNumber);
        ended = !next.buffer.isBuffer();
        next.buffer.recycleBuffer();
      }
    }
    view.releaseAllResources();
    // Data buffers, then EndOfPartition: one number each, consecutive in int32 arithmetic.
    expect(numbers.length).toBeGreaterThan(4);
    expect(numbers.slice(0, 4)).toEqual([start31, start31 + 1, start31 + 2, -(2 ** 31)]);
    numbers.forEach((n, i) => {
      expect(n).toBe((start31 + i) | 0);
    });
    for (const gate of job.gates) await gate.close();
    await expectPoolsFull(env);
  });

  it("fails its writer with the file error itself, SLUICE_ERR_PARTITION_FILE_WRITE naming the file, when its io.tmp.dirs folder cannot be written", async () => {
    const env = await start();
    const first = await deploy(env, 1, 1);
    // The worker's folders (made for the first partition) are gone, as with a disk unmounted
    // under it: creating the next partition's files fails.
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    const job = await deploy(env, 1, 1);
    const partition = sortMerge(job);
    while (!partition.isAvailable()) await partition.getAvailableFuture();
    expect(partition.isReleased()).toBe(true);
    let error: unknown;
    try {
      partition.emitRecord(frameRecord(Buffer.from("word")), 0);
    } catch (e) {
      error = e;
    }
    // The task's root cause is the write error, not a cancellation of the released partition.
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_WRITE)).toBe(true);
    expect(dirs.some((dir) => (error as Error).message.includes(dir))).toBe(true);
    expect((error as Error).message).toMatch(/ENOENT/);
    expect(partition.getFailureCause()).toBe(error);
    partition.close();
    sortMerge(first).release();
    await closeGates([...first.gates, ...job.gates]);
    await expectPoolsFull(env);
  });

  it("fails a consumer with SLUICE_ERR_PARTITION_FILE_CORRUPTED when its data file was truncated", async () => {
    const env = await start();
    const job = await deploy(env, 1, 2);
    await produce(sortMerge(job), 0, 3_000, 50);
    sortMerge(job).close();
    truncateSync(sortMerge(job).getFilePaths()?.dataFile as string, 10_000);
    const error = await consumeAll(job.gates, 1).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).message).toMatch(/data file ends|outside the/);
    // The local consumer names the partition it could not read, for the job side to re-run it.
    expect(isPartitionException(error)).toBe(true);
    expect((error as PartitionException).partitionId.equals(sortMerge(job).partitionId)).toBe(true);
    await closeGates(job.gates);
    await expectPoolsFull(env);
  });

  it("writes records larger than its sort buffer, and broadcast records, to every reader intact", async () => {
    // 4 segments: 2 to sort in (8 kb), 2 to write from.
    const env = await start({ "taskmanager.network.sort-shuffle.min-buffers": 4 });
    const job = await deploy(env, 1, 2);
    const writer = sortMerge(job);
    const big = Buffer.alloc(50_000, "x");
    const sequence: [string, number][] = [
      ["small to 0", 0],
      ["big", 1],
      ["broadcast", -1],
      ["small to 1", 1],
      ["big", 0],
    ];
    for (const [text, target] of sequence) {
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      const bytes = text === "big" ? big : Buffer.from(text);
      if (target < 0) writer.broadcastRecord(frameRecord(bytes));
      else writer.emitRecord(frameRecord(bytes), target);
    }
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    writer.finish();
    await writer.getAvailableFuture();
    writer.close();
    const seen = await Promise.all(job.gates.map((gate) => collect(gate)));
    const describe = (bytes: Buffer) => (bytes.equals(big) ? "big" : bytes.toString());
    expect(seen.map((records) => records.map(describe))).toEqual([
      ["small to 0", "broadcast", "big"],
      ["big", "broadcast", "small to 1"],
    ]);
    await closeGates(job.gates);
    await expectPoolsFull(env);
  });

  it("writes a region filled per subpartition in flushes of at most the write-buffer budget when it compresses", async () => {
    // 256 KiB segments: the budget is 32 buffers (8 MiB); 64 segments for 2 subpartitions are
    // filled per subpartition, so every full region is also flushed halfway.
    const overrides: RawConfig = {
      "taskmanager.memory.segment-size": "256kb",
      "taskmanager.memory.network.min": "48mb",
      "taskmanager.network.sort-shuffle.min-buffers": 64,
      "taskmanager.memory.framework.off-heap.batch-shuffle.size": "4mb",
    };
    config = { ...config, ...overrides };
    const env = await start();
    const flushes = vi.spyOn(PartitionedFileWriter.prototype, "flush");
    try {
      const job = await deploy(env, 1, 2);
      const writer = sortMerge(job);
      const records = 10_000;
      await produce(writer, 0, records, 1_000);
      writer.close();
      const checkers = await consumeAll(job.gates, 1);
      for (const checker of checkers) expect(checker.nextSeq).toEqual([records]);
      const stats = must(writer.getStatistics());
      expect(stats.bytesAfterCompression).toBeLessThan(stats.bytesBeforeCompression / 2);
      // One flush per region, plus the ones halfway through the full regions.
      expect(stats.numberOfRegions).toBeGreaterThan(2);
      expect(flushes.mock.calls.length).toBeGreaterThan(stats.numberOfRegions);
      await closeGates(job.gates);
      await expectPoolsFull(env);
    } finally {
      flushes.mockRestore();
    }
  });

  it("rejects a blocking partition with fewer subpartitions than sort-shuffle.min-parallelism", async () => {
    const env = await start({ "taskmanager.network.sort-shuffle.min-parallelism": 4 });
    await expect(
      deployAllToAll(env, env, 1, 2, config, ResultPartitionType.BLOCKING),
    ).rejects.toMatchObject({ code: ErrorCodes.CONFIG });
  });
});

/** Every record a one-channel gate delivers, until it finished. */
async function collect(gate: SingleInputGate): Promise<Buffer[]> {
  gate.setup();
  gate.requestPartitions();
  const deserializer = new SpillingAdaptiveSpanningRecordDeserializer();
  const holder: RecordHolder<Uint8Array> = { value: undefined };
  const records: Buffer[] = [];
  while (!gate.isFinished()) {
    const next = gate.pollNext();
    if (next === undefined) {
      await gate.getAvailableFuture();
      continue;
    }
    if (next.buffer === undefined) continue;
    deserializer.setNextBuffer(next.buffer);
    for (;;) {
      const result = deserializer.getNextRecordBytes(holder);
      if (result.isFullRecord()) records.push(Buffer.from(holder.value as Uint8Array));
      if (result.isBufferConsumed()) break;
    }
  }
  return records;
}
