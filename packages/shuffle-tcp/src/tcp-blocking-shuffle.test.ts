import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCodes, isSluiceError } from "@sluice/core";
import type { NetworkShuffleEnvironment, SortMergeResultPartition } from "@sluice/network";
import {
  type AllToAllJob,
  consumeAll,
  deployAllToAll,
  deployConsumers,
  environmentContext,
  produce,
  type RawConfig,
} from "@sluice/network/testing";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { TcpShuffleServiceFactory } from "./tcp-shuffle-service-factory.js";

const MB = 1024 * 1024;

describe("blocking (sort-merge) partitions read over TCP", () => {
  let dir: string;
  let config: RawConfig;
  const envs: NetworkShuffleEnvironment[] = [];

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sluice-tcp-blocking-"));
    config = {
      "taskmanager.memory.network.min": "1mb",
      "taskmanager.memory.segment-size": "8kb",
      "taskmanager.network.sort-shuffle.min-buffers": 16,
      "taskmanager.memory.framework.off-heap.batch-shuffle.size": "1mb",
      "taskmanager.network.partition-request-timeout": "5s",
      "io.tmp.dirs": dir,
    };
  });

  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function start(overrides: RawConfig = {}): Promise<NetworkShuffleEnvironment> {
    const env = new TcpShuffleServiceFactory().createShuffleEnvironment(
      environmentContext({ ...config, ...overrides }),
    );
    envs.push(env);
    await env.start();
    return env;
  }

  async function deploy(
    producer: NetworkShuffleEnvironment,
    consumer: NetworkShuffleEnvironment,
    producers: number,
    consumers: number,
  ): Promise<AllToAllJob> {
    const job = await deployAllToAll(
      producer,
      consumer,
      producers,
      consumers,
      config,
      ResultPartitionType.BLOCKING,
    );
    for (const writer of job.writers) writer.setup();
    return job;
  }

  async function expectPoolsFull(...envList: NetworkShuffleEnvironment[]): Promise<void> {
    for (const env of envList) {
      const pool = env.networkBufferPool;
      await expect
        .poll(() => pool.getNumberOfAvailableMemorySegments())
        .toBe(pool.totalNumberOfMemorySegments);
      const read = env.getReadBufferPoolUsage();
      if (read !== undefined) {
        await expect.poll(() => env.getReadBufferPoolUsage()?.available).toBe(read.total);
      }
    }
  }

  for (const codec of ["LZ4", "ZSTD", "NONE"] as const) {
    it(`writes four times the producer's network memory and serves it after the producer finished, twice and to two readers at once (${codec})`, async () => {
      config = { ...config, "taskmanager.network.compression.codec": codec };
      const producer = await start();
      const consumer = await start();
      const job = await deploy(producer, consumer, 2, 3);
      const records = codec === "LZ4" ? 7_000 : 2_000;
      await Promise.all(job.writers.map((writer, p) => produce(writer, p, records, 200)));
      if (codec === "LZ4") {
        let written = 0;
        for (const writer of job.writers) written += writer.metrics.numBytesOut;
        expect(written).toBeGreaterThan(4 * MB);
      }
      for (const writer of job.writers) writer.close();
      const first = await consumeAll(job.gates, 2);
      const again = deployConsumers(consumer, job, 3);
      const concurrent = deployConsumers(consumer, job, 3);
      const [second, third] = await Promise.all([consumeAll(again, 2), consumeAll(concurrent, 2)]);
      for (const checker of [...first, ...second, ...third]) {
        expect(checker.nextSeq).toEqual([records, records]);
      }
      const stats = (job.writers[0] as SortMergeResultPartition).getStatistics();
      if (codec === "NONE")
        expect(stats?.bytesAfterCompression).toBe(stats?.bytesBeforeCompression);
      else
        expect(stats?.bytesAfterCompression).toBeLessThan((stats?.bytesBeforeCompression ?? 0) / 2);
      for (const gate of [...job.gates, ...again, ...concurrent]) await gate.close();
      await expectPoolsFull(producer, consumer);
    });
  }

  it("keeps a remote request that arrives before the producer finished until it finished", async () => {
    const producer = await start();
    const consumer = await start();
    const job = await deploy(producer, consumer, 1, 2);
    const consuming = consumeAll(job.gates, 1);
    // The requests reach the producer's server while the partition is still being written.
    await expect.poll(() => producer.getNumberOfServerConnections()).toBe(1);
    await produce(job.writers[0] as SortMergeResultPartition, 0, 2_000, 30);
    for (const checker of await consuming) expect(checker.nextSeq).toEqual([2_000]);
    for (const gate of job.gates) await gate.close();
  });

  it("fails the remote consumer's channel with SLUICE_ERR_PARTITION_FILE_CORRUPTED when the data file was damaged", async () => {
    const producer = await start();
    const consumer = await start();
    const job = await deploy(producer, consumer, 1, 2);
    const writer = job.writers[0] as SortMergeResultPartition;
    await produce(writer, 0, 3_000, 50);
    writer.close();
    const dataFile = writer.getFilePaths()?.dataFile as string;
    // Keep the first half: the runs at the end point beyond the file now.
    const data = readFileSync(dataFile);
    writeFileSync(dataFile, data.subarray(0, data.length >> 1));
    const error = await consumeAll(job.gates, 1).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.PARTITION_FILE_CORRUPTED)).toBe(true);
    expect((error as Error).name).toBe("PartitionFileCorruptedError");
    for (const gate of job.gates) await gate.close();
    await expectPoolsFull(producer, consumer);
  });

  it("fails the remote consumer's channel with SLUICE_ERR_BUFFER_DECOMPRESSION on a corrupt compressed buffer", async () => {
    const producer = await start();
    const consumer = await start();
    const job = await deploy(producer, consumer, 1, 1);
    const writer = job.writers[0] as SortMergeResultPartition;
    await produce(writer, 0, 2_000, 200);
    writer.close();
    // The first run starts with a compressed buffer: [block length LE][original length LE][block].
    const dataFile = writer.getFilePaths()?.dataFile as string;
    const data = readFileSync(dataFile);
    const blockLength = data.readInt32LE(0);
    for (let i = 8; i < 8 + blockLength; i++) data[i] = (i * 131) & 0xff;
    writeFileSync(dataFile, data);
    const error = await consumeAll(job.gates, 1).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.BUFFER_DECOMPRESSION)).toBe(true);
    expect((error as Error).message).toMatch(/RemoteInputChannel/);
    for (const gate of job.gates) await gate.close();
    await expectPoolsFull(producer, consumer);
  });

  it("tells a consumer whose producer's partition was released that it is gone, and deletes the files", async () => {
    const producer = await start();
    const consumer = await start();
    const job = await deploy(producer, consumer, 1, 1);
    const writer = job.writers[0] as SortMergeResultPartition;
    await produce(writer, 0, 100, 10);
    writer.close();
    producer.releasePartitionsLocally([writer.partitionId]);
    const error = await consumeAll(job.gates, 1).catch((e: unknown) => e);
    expect(isSluiceError(error, ErrorCodes.CANCELLED)).toBe(true);
    expect((error as Error).message).toMatch(/released/);
    await expect.poll(() => producer.getPartitionsOccupyingLocalResources()).toEqual([]);
    for (const gate of job.gates) await gate.close();
  });
});
