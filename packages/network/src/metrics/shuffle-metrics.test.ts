import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  EndOfPartitionEvent,
  EventSerializer,
  type ExecutionAttemptID,
  frameRecord,
} from "@sluice/core";
import { ResultPartitionType, type ShuffleMetricSink } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type {
  GateBuffersMode,
  InputBufferUsage,
  SingleInputGate,
} from "../consumer/single-input-gate.js";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "../environment/network-shuffle-service-factory.js";
import type { SortMergeResultPartition } from "../partition/sort-merge-result-partition.js";
import {
  consumeAll,
  deployAllToAll,
  environmentContext,
  makeRecord,
  produce,
} from "../test-support/shuffle-fixture.js";
import { registerInputMetrics } from "./shuffle-metrics.js";

type Kind = "gauge" | "counter" | "meter";

/** Records what a plugin registers, by name, with its kind. */
class RecordingSink implements ShuffleMetricSink {
  readonly metrics = new Map<string, { kind: Kind; read: () => number }>();
  registerGauge(name: string, read: () => number): void {
    this.add(name, "gauge", read);
  }
  registerCounter(name: string, read: () => number): void {
    this.add(name, "counter", read);
  }
  registerMeter(name: string, read: () => number): void {
    this.add(name, "meter", read);
  }
  kindOf(name: string): Kind | undefined {
    return this.metrics.get(name)?.kind;
  }
  read(name: string): number {
    const metric = this.metrics.get(name);
    if (metric === undefined) throw new Error(`no metric ${name}`);
    return metric.read();
  }
  private add(name: string, kind: Kind, read: () => number): void {
    if (this.metrics.has(name)) throw new Error(`metric ${name} registered twice`);
    this.metrics.set(name, { kind, read });
  }
}

const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};

/** A record of the fixture with 400 bytes of padding: 12 + 400 bytes, plus the 4-byte length. */
const RECORD_BYTES = 4 + 12 + 400;

describe("shuffle metrics with Flink's names and kinds", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("registers bytes and buffers as counters with per-second meters, and buffer state as gauges", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    await env.start();
    const producerSink = new RecordingSink();
    const consumerSink = new RecordingSink();
    const original = env.createShuffleIOOwnerContext.bind(env);
    env.createShuffleIOOwnerContext = (name: string, attempt: ExecutionAttemptID) =>
      original(name, attempt, name.startsWith("producer") ? producerSink : consumerSink);
    const job = await deployAllToAll(env, env, 1, 1, config);
    for (const name of ["numBytesOut", "numBuffersOut"]) {
      expect(producerSink.kindOf(name)).toBe("counter");
      expect(producerSink.kindOf(`${name}PerSecond`)).toBe("meter");
    }
    for (const name of ["numBytesIn", "numBuffersIn"]) {
      expect(consumerSink.kindOf(name)).toBe("counter");
      expect(consumerSink.kindOf(`${name}PerSecond`)).toBe("meter");
    }
    for (const name of [
      "Shuffle.Netty.Input.numBytesInLocal",
      "Shuffle.Netty.Input.numBytesInRemote",
      "Shuffle.Netty.Input.numBuffersInLocal",
      "Shuffle.Netty.Input.numBuffersInRemote",
    ]) {
      expect(consumerSink.kindOf(name)).toBe("counter");
      expect(consumerSink.kindOf(`${name}PerSecond`)).toBe("meter");
    }
    for (const name of ["outputQueueLength", "outputQueueSize", "outPoolUsage"]) {
      expect(producerSink.kindOf(`Shuffle.Netty.Output.Buffers.${name}`)).toBe("gauge");
    }
    for (const name of [
      "inputQueueLength",
      "inputQueueSize",
      "inPoolUsage",
      "inputExclusiveBuffersUsage",
      "inputFloatingBuffersUsage",
    ]) {
      expect(consumerSink.kindOf(`Shuffle.Netty.Input.Buffers.${name}`)).toBe("gauge");
    }
    for (const gate of job.gates) await gate.close();
    for (const writer of job.writers) {
      writer.release();
      writer.close();
    }
  });

  it("counts the bytes and buffers of a known exchange and the buffers queued on both sides", async () => {
    const processSink = new RecordingSink();
    env = new LocalShuffleServiceFactory().createShuffleEnvironment({
      ...environmentContext(config),
      metrics: processSink,
    });
    await env.start();
    expect(processSink.read("Status.Shuffle.Netty.TotalMemorySegments")).toBe(256);
    expect(processSink.read("Status.Shuffle.Netty.TotalMemory")).toBe(1024 * 1024);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBe(0);
    expect(processSink.read("Status.Shuffle.Netty.RequestedMemoryUsage")).toBe(0);

    const producerSink = new RecordingSink();
    const consumerSink = new RecordingSink();
    const original = env.createShuffleIOOwnerContext.bind(env);
    env.createShuffleIOOwnerContext = (name: string, attempt: ExecutionAttemptID) =>
      original(name, attempt, name.startsWith("producer") ? producerSink : consumerSink);
    const job = await deployAllToAll(env, env, 1, 1, config);
    const [writer] = job.writers;
    const [gate] = job.gates;
    if (writer === undefined || gate === undefined) throw new Error("no writer or gate");
    writer.setup();
    gate.setup();
    gate.requestPartitions();

    // 30 records of 416 bytes fill 3 buffers of 4 kb (9 records each) and start a fourth.
    for (let i = 0; i < 30; i++) writer.emitRecord(frameRecord(makeRecord(0, 0, i, 400)), 0);
    writer.flushAll();
    const queued = producerSink.read("Shuffle.Netty.Output.Buffers.outputQueueLength");
    expect(queued).toBe(4);
    // The local channel reads the producer's subpartition in place: the same buffers wait there,
    // and as in Flink their bytes count only on the producer's side.
    expect(consumerSink.read("Shuffle.Netty.Input.Buffers.inputQueueLength")).toBe(queued);
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outputQueueSize")).toBe(
      30 * RECORD_BYTES,
    );
    expect(consumerSink.read("Shuffle.Netty.Input.Buffers.inputQueueSize")).toBe(0);
    // Both pools of the exchange are bounded: each counts its maximum size as requested.
    const gatePool = gate.getBufferPool();
    const outputPool = writer.getBufferPool();
    if (gatePool === undefined || outputPool === undefined) throw new Error("no pools");
    expect(processSink.read("Status.Shuffle.Netty.RequestedMemoryUsage")).toBe(
      Math.floor(
        (100 *
          (gatePool.getMaxNumberOfMemorySegments() + outputPool.getMaxNumberOfMemorySegments())) /
          256,
      ),
    );
    // The four buffers hold data; the pool's size is what the NetworkBufferPool granted it.
    const pool = writer.getBufferPool();
    if (pool === undefined) throw new Error("no output pool");
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outPoolUsage")).toBe(
      4 / pool.getNumBuffers(),
    );
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBeGreaterThan(0);
    // As in Flink, a buffer is counted once it is finished: the three full ones so far.
    expect(producerSink.read("numBytesOut")).toBe(3 * 4096);
    expect(producerSink.read("numBuffersOut")).toBe(3);
    // A meter reads the same count as its counter; its rate is the runtime's business.
    expect(producerSink.read("numBytesOutPerSecond")).toBe(producerSink.read("numBytesOut"));

    writer.finish();
    while (!gate.isFinished()) {
      const next = gate.pollNext();
      if (next === undefined) await gate.getAvailableFuture();
      else next.buffer?.recycleBuffer();
    }
    expect(consumerSink.read("Shuffle.Netty.Input.Buffers.inputQueueLength")).toBe(0);
    // As in Flink, the producer counts its data buffers; the gate counts every byte it received
    // (the EndOfPartition event too) but only data buffers.
    const endOfPartition = EventSerializer.toSerializedEvent(EndOfPartitionEvent.INSTANCE).length;
    expect(producerSink.read("numBytesOut")).toBe(30 * RECORD_BYTES);
    expect(producerSink.read("numBuffersOut")).toBe(4);
    expect(consumerSink.read("numBuffersIn")).toBe(4);
    expect(consumerSink.read("numBytesIn")).toBe(30 * RECORD_BYTES + endOfPartition);
    // Every byte came through the local channel (Flink's numBytesInLocal), none from the network.
    expect(consumerSink.read("Shuffle.Netty.Input.numBytesInLocal")).toBe(
      consumerSink.read("numBytesIn"),
    );
    expect(consumerSink.read("Shuffle.Netty.Input.numBuffersInLocal")).toBe(4);
    expect(consumerSink.read("Shuffle.Netty.Input.numBytesInRemote")).toBe(0);
    expect(consumerSink.read("Shuffle.Netty.Input.numBuffersInRemote")).toBe(0);
    await gate.close();
    writer.close();
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outPoolUsage")).toBe(0);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBe(0);
  });

  it("registers Flink's detailed queue lengths per partition and per gate only with taskmanager.network.detailed-metrics", async () => {
    const detailed = { ...config, "taskmanager.network.detailed-metrics": "true" };
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(detailed));
    await env.start();
    const producerSink = new RecordingSink();
    const consumerSinks = new Map<string, RecordingSink>();
    const original = env.createShuffleIOOwnerContext.bind(env);
    env.createShuffleIOOwnerContext = (name: string, attempt: ExecutionAttemptID) => {
      if (name.startsWith("producer")) return original(name, attempt, producerSink);
      const sink = new RecordingSink();
      consumerSinks.set(name, sink);
      return original(name, attempt, sink);
    };
    const job = await deployAllToAll(env, env, 1, 2, detailed);
    const [writer] = job.writers;
    if (writer === undefined) throw new Error("no writer");
    writer.setup();
    // Subpartition 0 gets three full buffers and a started one, subpartition 1 one started one.
    for (let i = 0; i < 30; i++) writer.emitRecord(frameRecord(makeRecord(0, 0, i, 400)), 0);
    writer.emitRecord(frameRecord(makeRecord(0, 1, 0, 400)), 1);
    const output = "Shuffle.Netty.Output.0";
    expect(producerSink.read(`${output}.totalQueueLen`)).toBe(5);
    expect(producerSink.read(`${output}.minQueueLen`)).toBe(1);
    expect(producerSink.read(`${output}.maxQueueLen`)).toBe(4);
    expect(producerSink.read(`${output}.avgQueueLen`)).toBe(2.5);
    // Local channels only: Flink counts the queues of remote channels, so there are none here.
    expect(consumerSinks.size).toBe(2);
    for (const sink of consumerSinks.values()) {
      expect(sink.kindOf("Shuffle.Netty.Input.0.totalQueueLen")).toBe("gauge");
      expect(sink.read("Shuffle.Netty.Input.0.maxQueueLen")).toBe(0);
    }
    for (const gate of job.gates) await gate.close();
    writer.release();
    writer.close();

    // Off by default.
    const plain = new RecordingSink();
    registerInputMetrics(plain, job.gates);
    expect(plain.kindOf("Shuffle.Netty.Input.0.totalQueueLen")).toBeUndefined();
  });

  it("counts what blocking partitions write, compress and delete, and the read memory, at process scope", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sluice-batch-metrics-"));
    try {
      const processSink = new RecordingSink();
      const blockingConfig = {
        ...config,
        "taskmanager.network.sort-shuffle.min-buffers": 16,
        "taskmanager.memory.framework.off-heap.batch-shuffle.size": "256kb",
        "io.tmp.dirs": dir,
      };
      env = new LocalShuffleServiceFactory().createShuffleEnvironment({
        ...environmentContext(blockingConfig),
        metrics: processSink,
      });
      await env.start();
      const batch = (name: string) => processSink.read(`Status.Shuffle.Netty.BatchShuffle.${name}`);
      expect(processSink.kindOf("Status.Shuffle.Netty.BatchShuffle.FilesDeleted")).toBe("counter");
      expect(processSink.kindOf("Status.Shuffle.Netty.BatchShuffle.FilesOnDisk")).toBe("gauge");
      expect(batch("TotalReadBuffers")).toBe(0);

      const job = await deployAllToAll(env, env, 1, 2, config, ResultPartitionType.BLOCKING);
      const writer = job.writers[0] as SortMergeResultPartition;
      writer.setup();
      // The fixture's padding repeats, so LZ4 makes the buffers smaller.
      await produce(writer, 0, 2_000, 400);
      const files = writer.getFilePaths();
      if (files === undefined) throw new Error("no files");
      expect(batch("FilesCreated")).toBe(2);
      expect(batch("FilesOnDisk")).toBe(2);
      expect(batch("FileBytesWritten")).toBe(
        statSync(files.dataFile).size + statSync(files.indexFile).size,
      );
      expect(batch("BytesBeforeCompression")).toBe(2 * 2_000 * RECORD_BYTES);
      expect(batch("BytesAfterCompression")).toBeLessThan(batch("BytesBeforeCompression"));
      expect(batch("TotalReadBuffers")).toBe((256 * 1024) / 4096);

      await consumeAll(job.gates, 1);
      for (const gate of job.gates) await gate.close();
      expect(batch("AvailableReadBuffers")).toBe(batch("TotalReadBuffers"));
      env.releasePartitionsLocally([writer.partitionId]);
      writer.close();
      await expect.poll(() => batch("FilesDeleted")).toBe(2);
      expect(batch("FilesOnDisk")).toBe(0);
    } finally {
      await env?.close();
      env = undefined;
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("divides the used buffers of all gates by their total, per kind, as Flink's usage gauges do", () => {
    const sink = new RecordingSink();
    const gateWith = (usage: InputBufferUsage, mode: GateBuffersMode = "exclusive") =>
      ({
        metrics: { numBytesIn: 0, numBuffersIn: 0, inPoolUsage: () => 0 },
        getBuffersMode: () => mode,
        getPartitionRequestRetries: () => 2,
        getBufferUsage: () => usage,
        getNumberOfQueuedBuffers: () => 3,
        getSizeOfQueuedBuffers: () => 100,
        getInputCounts: () => ({
          numBytesInLocal: 1,
          numBytesInRemote: 2,
          numBuffersInLocal: 3,
          numBuffersInRemote: 4,
        }),
        getDebloatedBufferSize: () => undefined,
        getQueueLengthsOfRemoteChannels: () => [1, 3],
      }) as unknown as SingleInputGate;
    registerInputMetrics(sink, [
      gateWith(
        { exclusiveUsed: 2, exclusiveTotal: 4, floatingUsed: 1, floatingTotal: 8 },
        "floating-only",
      ),
      gateWith({ exclusiveUsed: 4, exclusiveTotal: 4, floatingUsed: 0, floatingTotal: 0 }),
    ]);
    const buffers = "Shuffle.Netty.Input.Buffers";
    expect(sink.read(`${buffers}.inputExclusiveBuffersUsage`)).toBe(6 / 8);
    expect(sink.read(`${buffers}.inputFloatingBuffersUsage`)).toBe(1 / 8);
    expect(sink.read(`${buffers}.inPoolUsage`)).toBe(7 / 16);
    expect(sink.read(`${buffers}.inputQueueLength`)).toBe(6);
    expect(sink.read(`${buffers}.inputQueueSize`)).toBe(200);
    expect(sink.read("Shuffle.Netty.Input.numBytesInRemote")).toBe(4);
    expect(sink.read("Shuffle.Netty.Input.numBuffersInLocal")).toBe(6);
    expect(sink.read("Shuffle.Netty.Input.0.floatingBuffersOnly")).toBe(1);
    expect(sink.read("Shuffle.Netty.Input.partitionRequestRetries")).toBe(4);
    expect(sink.kindOf("Shuffle.Netty.Input.partitionRequestRetries")).toBe("counter");
    expect(sink.read("Shuffle.Netty.Input.1.floatingBuffersOnly")).toBe(0);
    // Without debloating, Flink registers no debloating gauges.
    expect(sink.kindOf("debloatedBufferSize")).toBeUndefined();
  });

  it("aggregates the detailed queue lengths of a gate's remote channels as Flink's InputGateMetrics do", () => {
    const sink = new RecordingSink();
    const gateWith = (lengths: number[]) =>
      ({
        metrics: { numBytesIn: 0, numBuffersIn: 0, inPoolUsage: () => 0 },
        getInputCounts: () => ({
          numBytesInLocal: 0,
          numBytesInRemote: 0,
          numBuffersInLocal: 0,
          numBuffersInRemote: 0,
        }),
        getDebloatedBufferSize: () => undefined,
        getQueueLengthsOfRemoteChannels: () => lengths,
      }) as unknown as SingleInputGate;
    registerInputMetrics(sink, [gateWith([1, 3, 8]), gateWith([])], true);
    expect(sink.read("Shuffle.Netty.Input.0.totalQueueLen")).toBe(12);
    expect(sink.read("Shuffle.Netty.Input.0.minQueueLen")).toBe(1);
    expect(sink.read("Shuffle.Netty.Input.0.maxQueueLen")).toBe(8);
    expect(sink.read("Shuffle.Netty.Input.0.avgQueueLen")).toBe(4);
    // A gate without remote channels reads 0 everywhere.
    for (const name of ["totalQueueLen", "minQueueLen", "maxQueueLen", "avgQueueLen"]) {
      expect(sink.read(`Shuffle.Netty.Input.1.${name}`)).toBe(0);
    }
  });
});
