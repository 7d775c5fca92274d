import { ExecutionAttemptID } from "@sluice/core";
import type { ShuffleMetricSink } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "../environment/network-shuffle-service-factory.js";
import {
  createGate,
  createWriter,
  registerPartition,
  testRecord,
  unitTestContext,
} from "../test-support/environment-harness.js";

class RecordingSink implements ShuffleMetricSink {
  readonly gauges = new Map<string, () => number>();
  registerGauge(name: string, read: () => number): void {
    if (this.gauges.has(name)) throw new Error(`gauge ${name} registered twice`);
    this.gauges.set(name, read);
  }
  read(name: string): number {
    const gauge = this.gauges.get(name);
    if (gauge === undefined) throw new Error(`no gauge ${name}`);
    return gauge();
  }
}

const config = {
  "taskmanager.memory.network.min": "1mb",
  "taskmanager.memory.segment-size": "4kb",
};

describe("shuffle metrics with Flink's names", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("reports memory segments, pool usage, queue length and byte counters as data moves", async () => {
    const processSink = new RecordingSink();
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(
      unitTestContext(config, { metrics: processSink }),
    );
    await env.start();
    expect(processSink.read("Status.Shuffle.Netty.TotalMemorySegments")).toBe(256);
    expect(processSink.read("Status.Shuffle.Netty.TotalMemory")).toBe(1024 * 1024);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBe(0);

    // Task-scope sinks come with each task's owner context.
    const producerSink = new RecordingSink();
    const consumerSink = new RecordingSink();
    const partition = await registerPartition(env);
    const writer = createWriter(
      env,
      partition,
      env.createShuffleIOOwnerContext("producer", partition.producerAttempt, producerSink),
    );
    const gate = createGate(
      env,
      partition.shuffleDescriptor,
      env.createShuffleIOOwnerContext("consumer", new ExecutionAttemptID(), consumerSink),
    );
    writer.setup();
    for (let i = 0; i < 30; i++) writer.emitRecord(testRecord(i, 412), 0);
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outPoolUsage")).toBeGreaterThan(0);
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outputQueueLength")).toBeGreaterThan(1);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBeGreaterThan(0);
    expect(processSink.read("Status.Shuffle.Netty.AvailableMemory")).toBeLessThan(1024 * 1024);

    // Consume everything; the counters of both sides add up.
    writer.finish();
    gate.setup();
    gate.requestPartitions();
    while (!gate.isFinished()) {
      const next = gate.pollNext();
      if (next === undefined) await gate.getAvailableFuture();
      else next.buffer?.recycleBuffer();
    }
    const bytesOut = producerSink.read("Shuffle.Netty.Output.numBytesOut");
    expect(bytesOut).toBe(30 * (4 + 12 + 400));
    expect(consumerSink.read("Shuffle.Netty.Input.numBytesIn")).toBeGreaterThanOrEqual(bytesOut);
    expect(consumerSink.read("Shuffle.Netty.Input.numBuffersIn")).toBe(
      producerSink.read("Shuffle.Netty.Output.numBuffersOut"),
    );
    await gate.close();
    writer.close();
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBe(0);
  });
});
