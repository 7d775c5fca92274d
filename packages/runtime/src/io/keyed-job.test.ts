import { Int64Serializer, ObjectSerializer, StringSerializer } from "@sluice/core";
import { LocalShuffleServiceFactory, type NetworkShuffleEnvironment } from "@sluice/network";
import { deployAllToAll, environmentContext } from "@sluice/network/testing";
import { afterEach, describe, expect, it } from "vitest";
import { assignKeyToParallelOperator } from "../partitioner/key-group-range-assignment.js";
import { KeyGroupStreamPartitioner } from "../partitioner/key-group-stream-partitioner.js";
import { PollStatus, RecordReader } from "./record-reader.js";
import { bufferTimeoutOf, createRecordWriter } from "./record-writer.js";
import "@sluice/core/testing";

const config = {
  "taskmanager.memory.network.min": "8mb",
  "taskmanager.memory.segment-size": "16kb",
};

interface Keyed {
  key: string;
  producer: string;
  seq: bigint;
}

const serializer = new ObjectSerializer<Keyed>({
  key: new StringSerializer(),
  producer: new StringSerializer(),
  seq: new Int64Serializer(),
});

describe("an in-process keyed job through RecordWriter and RecordReader", () => {
  let env: NetworkShuffleEnvironment | undefined;

  afterEach(async () => {
    await env?.close();
    env = undefined;
  });

  it("routes 10^6 key-group-hashed records from 2 producers to 4 consumers exactly once, in order per channel", async () => {
    env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
    await env.start();
    const job = await deployAllToAll(env, env, 2, 4, config);
    const perProducer = 500_000;
    const maxParallelism = 128;

    const produce = async (p: number) => {
      const partition = job.writers[p];
      if (partition === undefined) throw new Error("missing writer");
      partition.setup();
      const writer = createRecordWriter(
        partition,
        serializer,
        new KeyGroupStreamPartitioner<Keyed, string>((r) => r.key, maxParallelism),
        { taskName: `producer ${p}`, bufferTimeout: bufferTimeoutOf(true, 5) },
      );
      const record: Keyed = { key: "", producer: `p${p}`, seq: 0n };
      for (let i = 0; i < perProducer; i++) {
        if (!writer.isAvailable()) await writer.getAvailableFuture();
        record.key = `k${(i * 7919 + p) % 100_003}`;
        record.seq = BigInt(i);
        writer.emit(record);
        if (i % 4096 === 4095) await new Promise((r) => setImmediate(r));
      }
      if (!writer.isAvailable()) await writer.getAvailableFuture();
      writer.close();
      partition.finish();
    };

    const consume = async (c: number) => {
      const gate = job.gates[c];
      if (gate === undefined) throw new Error("missing gate");
      gate.setup();
      gate.requestPartitions();
      const reader = new RecordReader(gate, serializer);
      const lastSeq = new Map<string, bigint>();
      let count = 0;
      let misrouted = 0;
      let outOfOrder = 0;
      for (;;) {
        const status = reader.pollRecords((r) => {
          count++;
          if (assignKeyToParallelOperator(r.key, maxParallelism, 4) !== c) misrouted++;
          const last = lastSeq.get(r.producer) ?? -1n;
          if (r.seq <= last) outOfOrder++;
          lastSeq.set(r.producer, r.seq);
        }, 2048);
        if (status === PollStatus.END_OF_INPUT) break;
        if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
        else await new Promise((r) => setImmediate(r));
      }
      reader.close();
      return { count, misrouted, outOfOrder };
    };

    const [, , ...results] = await Promise.all([
      produce(0),
      produce(1),
      ...[0, 1, 2, 3].map(consume),
    ]);
    const total = results.reduce((sum, r) => sum + (r?.count ?? 0), 0);
    expect(total).toBe(2 * perProducer);
    for (const r of results) {
      expect(r?.misrouted).toBe(0);
      expect(r?.outOfOrder).toBe(0);
      expect(r?.count).toBeGreaterThan(0);
    }
    for (const gate of job.gates) await gate.close();
    for (const writer of job.writers) writer.close();
    const pool = env.networkBufferPool;
    expect(pool).toHaveAllSegmentsAvailable();
  }, 60_000);
});
