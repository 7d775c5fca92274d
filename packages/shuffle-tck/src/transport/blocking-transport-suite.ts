import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import { deferred, ErrorCodes, isPartitionException, type PartitionException } from "@sluice/core";
import type { SortMergeResultPartition } from "@sluice/network/plugin";
import type { ExecutionVertex, JobResult, TaskExecutor } from "@sluice/runtime";
import { ResultPartitionType } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Exchange, type ExchangeSpec, readerName } from "../exchange.js";
import { expectReadInFull } from "../kit-results.js";
import {
  gatewayOf,
  InProcessCluster,
  networkEnvironmentOf,
  type RawConfig,
} from "./in-process-cluster.js";

/** What {@link describeBlockingTransportSuite} needs to know about the plugin. */
export interface BlockingTransportSuiteOptions {
  /** A label, e.g. "TCP". */
  readonly name: string;
  /** The plugin's `shuffle-service-factory.class` value. */
  readonly factory: string;
}

const MB = 1024 * 1024;

/** Small memory everywhere, so that a few megabytes are several times a worker's network memory. */
const BASE: RawConfig = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.network.max": "1mb",
  "taskmanager.memory.segment-size": "8kb",
  "taskmanager.network.sort-shuffle.min-buffers": 16,
  "taskmanager.memory.framework.off-heap.batch-shuffle.size": "1mb",
  "taskmanager.network.partition-request-timeout": "5s",
  "execution.buffer-timeout.interval": "5ms",
};

/** Consumers' gates need more than the producer's sort buffers. */
const CONSUMER: RawConfig = {
  "taskmanager.memory.network.min": "4mb",
  "taskmanager.memory.network.max": "4mb",
};

/**
 * BLOCKING (sort-merge) partitions of a network-shuffle plugin between TaskExecutors in one
 * process, deployed by the JobDeployer: data several times the producer's network memory, every
 * codec, served after the producer finished to several readers, a request that arrives before it
 * finished, damaged files, released partitions. Every buffer, of the network memory and of the
 * batch-shuffle read memory, comes home; released files are gone.
 */
export function describeBlockingTransportSuite(options: BlockingTransportSuiteOptions): void {
  describe(`blocking partitions of the ${options.name} shuffle between two TaskExecutors`, () => {
    let dir: string;
    let cluster: InProcessCluster | undefined;
    let holds: (() => void)[];

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), "sluice-blocking-transport-"));
      holds = [];
    });

    afterEach(async () => {
      // A deployment still held would keep its job, and so the deployer, from ending.
      for (const release of holds) release();
      await cluster?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** The test's cluster, once {@link start} created it. */
    function kit(): InProcessCluster {
      if (cluster === undefined) throw new Error("start() the cluster first");
      return cluster;
    }

    /** A producer and a consumer TaskExecutor with `extra` configuration. */
    async function start(extra: RawConfig = {}): Promise<[TaskExecutor, TaskExecutor]> {
      cluster = new InProcessCluster(options.factory, { ...BASE, "io.tmp.dirs": dir, ...extra });
      return [await kit().startExecutor(), await kit().startExecutor(CONSUMER)];
    }

    /** A promise the afterEach settles too, so that a failed test leaves nothing held. */
    function hold(): { readonly promise: Promise<void>; readonly resolve: () => void } {
      const held = deferred();
      holds.push(held.resolve);
      return held;
    }

    /** The sort-merge writers of an exchange's producers (they outlive the producer tasks). */
    function writersOf(exchange: Exchange): SortMergeResultPartition[] {
      return exchange.producers.map((producer) => {
        const progress = kit().tasks.producers.get(producer.attemptId.toString());
        if (progress === undefined) throw new Error(`${producer.name} did not run`);
        return progress.partition as unknown as SortMergeResultPartition;
      });
    }

    async function expectFinished(vertices: readonly ExecutionVertex[]): Promise<void> {
      for (const vertex of vertices) {
        await expect.poll(() => vertex.state, { timeout: 20_000 }).toBe("FINISHED");
      }
    }

    /** The batch-shuffle read memory of every executor is free again (the network memory is checked at close). */
    async function expectReadBuffersBack(...executors: TaskExecutor[]): Promise<void> {
      for (const executor of executors) {
        const environment = networkEnvironmentOf(executor);
        const usage = environment.getReadBufferPoolUsage();
        if (usage === undefined) continue;
        await expect.poll(() => environment.getReadBufferPoolUsage()?.available).toBe(usage.total);
      }
    }

    /**
     * `cause` is a partition exception naming the partition `producer` wrote: its id (whose
     * producer is `producer`'s attempt) and, in the message, the producer.
     */
    /** Checks that the job failed and returns why its (first) consumer failed. */
    function consumerFailureOf(result: JobResult, exchange: Exchange): Error | undefined {
      expect(result.status).toBe("FAILED");
      return (exchange.consumers[0] as ExecutionVertex).failureCause;
    }

    function expectNamesPartitionOf(cause: Error | undefined, producer: ExecutionVertex): void {
      expect(isPartitionException(cause)).toBe(true);
      const partitionId = (cause as PartitionException).partitionId;
      expect(partitionId.producerId.equals(producer.attemptId)).toBe(true);
      expect(cause?.message).toContain(String(producer.attemptId));
    }

    /** The regular files left under the executors' `io.tmp.dirs`. */
    function files(): string[] {
      return readdirSync(dir, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => join(entry.parentPath, entry.name));
    }

    /**
     * A blocking exchange of one producer and one consumer whose deployment waits until the
     * test ran `damage` on the finished partition; returns how the job ended.
     */
    async function readAfter(
      damage: (
        writer: SortMergeResultPartition,
        producer: TaskExecutor,
        exchange: Exchange,
      ) => void | Promise<void>,
    ): Promise<{ result: JobResult; exchange: Exchange; executors: TaskExecutor[] }> {
      const [producer, consumer] = await start();
      const consumersMayDeploy = hold();
      const exchange = await kit().deploy(
        {
          producers: 1,
          consumers: 1,
          plan: { records: 3_000, padding: 100 },
          partitionType: ResultPartitionType.BLOCKING,
        },
        producer,
        gatewayOf(consumer, { deployAfter: consumersMayDeploy.promise }),
      );
      await expectFinished(exchange.producers);
      await damage(writersOf(exchange)[0] as SortMergeResultPartition, producer, exchange);
      consumersMayDeploy.resolve();
      return {
        result: await exchange.execution.terminated,
        exchange,
        executors: [producer, consumer],
      };
    }

    for (const codec of ["LZ4", "ZSTD", "NONE"] as const) {
      it(`writes four times the producer's network memory and serves it, after the producer finished, to two consumer vertices (${codec})`, async () => {
        const [producer, consumer] = await start({
          "taskmanager.network.compression.codec": codec,
        });
        const records = codec === "LZ4" ? 10_000 : 2_000;
        const spec: ExchangeSpec = {
          producers: 2,
          consumers: 3,
          plan: { records, padding: 200 },
          partitionType: ResultPartitionType.BLOCKING,
          readers: 2,
        };
        const exchange = await kit().deploy(spec, producer, consumer);
        const result = await exchange.execution.terminated;
        expect(result.error).toBeUndefined();
        expectReadInFull(result, 2, records, readerName(0));
        expectReadInFull(result, 2, records, readerName(1));
        const writers = writersOf(exchange);
        if (codec === "LZ4") {
          const written = writers.reduce((sum, writer) => sum + writer.metrics.numBytesOut, 0);
          expect(producer.networkMemory.bytes).toBe(MB);
          expect(written).toBeGreaterThan(4 * producer.networkMemory.bytes);
        }
        for (const writer of writers) {
          const stats = writer.getStatistics();
          if (codec === "NONE") {
            expect(stats?.bytesAfterCompression).toBe(stats?.bytesBeforeCompression);
          } else {
            expect(stats?.bytesAfterCompression).toBeLessThan(
              (stats?.bytesBeforeCompression ?? 0) / 2,
            );
          }
        }
        await expectReadBuffersBack(producer, consumer);
        await expect.poll(files).toEqual([]);
      });
    }

    it("keeps a remote request that arrives before the producer finished until the partition is complete", async () => {
      // No retries (a budget of 2 × 2.5 s is used up by the first 5 s wait): the request
      // succeeds only because the producer's server keeps it waiting.
      const [producer, consumer] = await start({
        "taskmanager.network.request-backoff.max": "2500ms",
      });
      const exchange = await kit().deploy(
        {
          producers: 1,
          consumers: 2,
          plan: { records: 5_000, padding: 20, pauseAfter: 1_000 },
          partitionType: ResultPartitionType.BLOCKING,
          consumersInProducerRegion: true,
        },
        producer,
        consumer,
      );
      const attempt = (exchange.producers[0] as ExecutionVertex).attemptId.toString();
      await expect.poll(() => kit().tasks.producers.get(attempt)?.paused).toBe(true);
      // The consumers were deployed with the producer and asked for the partition while it writes.
      await expect
        .poll(() => networkEnvironmentOf(producer).getNumberOfServerConnections())
        .toBe(1);
      expect(exchange.consumers.map((c) => c.state)).not.toContain("FAILED");
      kit().tasks.resume(attempt);
      const result = await exchange.execution.terminated;
      expect(result.error).toBeUndefined();
      expectReadInFull(result, 1, 5_000, readerName(0));
      await expectReadBuffersBack(producer, consumer);
    });

    it("fails the remote consumer with SLUICE_ERR_PARTITION_FILE_CORRUPTED when the data file was damaged", async () => {
      const { result, exchange, executors } = await readAfter((writer) => {
        const dataFile = writer.getFilePaths()?.dataFile as string;
        // Keep the first half: the runs at the end now point beyond the file.
        const data = readFileSync(dataFile);
        writeFileSync(dataFile, data.subarray(0, data.length >> 1));
      });
      const cause = consumerFailureOf(result, exchange);
      expect(cause).toMatchObject({
        code: ErrorCodes.PARTITION_FILE_CORRUPTED,
        name: "PartitionFileCorruptedError",
      });
      // It crossed from the consumer's task to the job side naming the partition it could not read.
      expectNamesPartitionOf(cause, exchange.producers[0] as ExecutionVertex);
      await expectReadBuffersBack(...executors);
    });

    it("fails the remote consumer with SLUICE_ERR_PARTITION_FILE_CORRUPTED, before it receives them, when stored bytes changed and the framing is intact", async () => {
      const { result, exchange, executors } = await readAfter((writer) => {
        const dataFile = writer.getFilePaths()?.dataFile as string;
        const data = readFileSync(dataFile);
        // The first buffer's compressed block: its header and every length stay valid.
        const blockLength = data.readInt32LE(0);
        for (let i = 8; i < 8 + blockLength; i++) data[i] = (i * 131) & 0xff;
        writeFileSync(dataFile, data);
      });
      const cause = consumerFailureOf(result, exchange);
      // The producer's worker checked the buffer's CRC32 before sending it: the consumer's
      // decompressor never saw the damaged bytes.
      expect(cause).toMatchObject({ code: ErrorCodes.PARTITION_FILE_CORRUPTED });
      expect(cause?.message).toMatch(/CRC32/);
      expectNamesPartitionOf(cause, exchange.producers[0] as ExecutionVertex);
      await expectReadBuffersBack(...executors);
    });

    it("fails the remote consumer with SLUICE_ERR_BUFFER_DECOMPRESSION on a corrupt compressed buffer", async () => {
      const { result, exchange, executors } = await readAfter((writer) => {
        // The first run starts with a compressed buffer (LZ4, the default codec):
        // [block length LE][original length LE][block]. Damaged before it was written (its
        // header's CRC32 is of the damaged bytes), so only the consumer's decompressor can tell.
        const { dataFile, indexFile } = writer.getFilePaths() as {
          dataFile: string;
          indexFile: string;
        };
        const data = readFileSync(dataFile);
        const blockLength = data.readInt32LE(0);
        for (let i = 8; i < 8 + blockLength; i++) data[i] = (i * 131) & 0xff;
        rewriteFirstBufferChecksum(data, readFileSync(indexFile));
        writeFileSync(dataFile, data);
      });
      const cause = consumerFailureOf(result, exchange);
      expect(cause).toMatchObject({ code: ErrorCodes.BUFFER_DECOMPRESSION });
      expect(cause?.message).toMatch(/RemoteInputChannel/);
      await expectReadBuffersBack(...executors);
    });

    it("tells a consumer whose partition was released that it is not found (SLUICE_ERR_PARTITION_NOT_FOUND naming it), and the files are deleted", async () => {
      let paths: string[] = [];
      const { result, exchange, executors } = await readAfter(async (writer, producer, job) => {
        const filePaths = writer.getFilePaths();
        paths = filePaths === undefined ? [] : [filePaths.dataFile, filePaths.indexFile];
        expect(paths.every((path) => existsSync(path))).toBe(true);
        // What the job side does at a job's end, here before the consumer reads.
        await producer.releasePartitions(job.execution.jobId, [writer.partitionId]);
      });
      const cause = consumerFailureOf(result, exchange);
      expect(cause).toMatchObject({ code: ErrorCodes.PARTITION_NOT_FOUND });
      expect(cause?.message).toMatch(/released/);
      expectNamesPartitionOf(cause, exchange.producers[0] as ExecutionVertex);
      await expect.poll(() => paths.filter((path) => existsSync(path))).toEqual([]);
      expect(
        networkEnvironmentOf(executors[0] as TaskExecutor).getPartitionsOccupyingLocalResources(),
      ).toEqual([]);
      await expectReadBuffersBack(...executors);
    });

    it("fails a consumer with SLUICE_ERR_PARTITION_CONNECTION naming the partition when the producer's TaskExecutor is gone before it reads", async () => {
      const { result, exchange, executors } = await readAfter(async (_writer, producer) => {
        // The worker that holds the finished partition goes away (with its data server).
        await producer.close();
      });
      const cause = consumerFailureOf(result, exchange);
      expect(cause).toMatchObject({
        code: ErrorCodes.PARTITION_CONNECTION,
        name: "PartitionConnectionError",
      });
      expectNamesPartitionOf(cause, exchange.producers[0] as ExecutionVertex);
      await expectReadBuffersBack(executors[1] as TaskExecutor);
    });

    it("fails a consumer with SLUICE_ERR_PARTITION_CONNECTION naming the partition when the producer's TaskExecutor is lost while it reads", async () => {
      const [producer, consumer] = await start();
      const exchange = await kit().deploy(
        {
          producers: 1,
          consumers: 1,
          plan: { records: 20_000, padding: 100 },
          consume: { stallAfter: 10 },
          partitionType: ResultPartitionType.BLOCKING,
        },
        producer,
        consumer,
      );
      const reader = exchange.consumers[0] as ExecutionVertex;
      const attempt = reader.attemptId.toString();
      // The consumer read part of the partition and holds its connection to the producer.
      await expect.poll(() => kit().tasks.consumers.get(attempt)?.paused).toBe(true);
      expect(networkEnvironmentOf(producer).getNumberOfServerConnections()).toBe(1);
      await producer.close();
      kit().tasks.resume(attempt);
      const result = await exchange.execution.terminated;
      expect(result.status).toBe("FAILED");
      expect(reader.failureCause).toMatchObject({
        code: ErrorCodes.PARTITION_CONNECTION,
        name: "PartitionConnectionError",
      });
      expect(reader.failureCause?.message).toMatch(/lost the connection/);
      expectNamesPartitionOf(reader.failureCause, exchange.producers[0] as ExecutionVertex);
      await expectReadBuffersBack(consumer);
    });
  });
}

/**
 * Writes the CRC32 of the data file's first buffer, as it now is, into that buffer's header (the
 * layout of docs/architecture.md: a run's payloads, then a 12-byte header per buffer with the
 * CRC32 at +8, then its count). The run holding offset 0 is found in the index.
 */
function rewriteFirstBufferChecksum(data: Buffer, index: Buffer): void {
  let runSize = 0;
  for (let at = 0; at + 16 <= index.length; at += 16) {
    if (Number(index.readBigInt64BE(at)) === 0 && Number(index.readBigInt64BE(at + 8)) > 0) {
      runSize = Number(index.readBigInt64BE(at + 8));
      break;
    }
  }
  const count = data.readInt32BE(runSize - 4);
  const header = runSize - 4 - 12 * count;
  const length = data.readInt32BE(header + 4);
  data.writeUInt32BE(crc32(data.subarray(0, length)) >>> 0, header + 8);
}
