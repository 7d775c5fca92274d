import type { ExecutionAttemptID } from "@sluice/core";
import type { ShuffleMetricSink } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import type { NetworkShuffleEnvironment } from "../environment/network-shuffle-environment.js";
import { LocalShuffleServiceFactory } from "../environment/network-shuffle-service-factory.js";
import { deployAllToAll, environmentContext, makeRecord } from "../test-support/shuffle-fixture.js";

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
    env = new LocalShuffleServiceFactory().createShuffleEnvironment({
      ...environmentContext(config),
      metrics: processSink,
    });
    await env.start();
    expect(processSink.read("Status.Shuffle.Netty.TotalMemorySegments")).toBe(256);
    expect(processSink.read("Status.Shuffle.Netty.TotalMemory")).toBe(1024 * 1024);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBe(0);

    // Wire the task-scope sinks through the owner contexts the fixture creates.
    const producerSink = new RecordingSink();
    const consumerSink = new RecordingSink();
    const original = env.createShuffleIOOwnerContext.bind(env);
    env.createShuffleIOOwnerContext = (name: string, attempt: ExecutionAttemptID) =>
      original(name, attempt, name.startsWith("producer") ? producerSink : consumerSink);
    const job = await deployAllToAll(env, env, 1, 1, config);
    const writer = job.writers[0];
    if (writer === undefined) throw new Error("no writer");
    writer.setup();
    for (let i = 0; i < 30; i++) writer.emitRecord(makeRecord(0, 0, i, 400), 0);
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outPoolUsage")).toBeGreaterThan(0);
    expect(producerSink.read("Shuffle.Netty.Output.Buffers.outputQueueLength")).toBeGreaterThan(1);
    expect(processSink.read("Status.Shuffle.Netty.UsedMemorySegments")).toBeGreaterThan(0);
    expect(processSink.read("Status.Shuffle.Netty.AvailableMemory")).toBeLessThan(1024 * 1024);

    // Consume everything; the counters of both sides add up.
    writer.finish();
    const gate = job.gates[0];
    if (gate === undefined) throw new Error("no gate");
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
