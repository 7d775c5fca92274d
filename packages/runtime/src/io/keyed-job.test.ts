import { Int64Serializer, ObjectSerializer, StringSerializer } from "@sluice/core";
import { afterEach, describe, expect, it } from "vitest";
import { JobGraph } from "../jobmaster/job-graph.js";
import { assignKeyToParallelOperator } from "../partitioner/key-group-range-assignment.js";
import type { Task } from "../taskexecutor/task.js";
import { LocalCluster, localConfiguration } from "../taskexecutor/test-support/local-cluster.js";
import { PollStatus } from "./record-reader.js";

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

const PER_PRODUCER = 500_000;
const MAX_PARALLELISM = 128;

async function produce(task: Task): Promise<void> {
  const writer = task.writer<Keyed>();
  const record: Keyed = { key: "", producer: `p${task.subtaskIndex}`, seq: 0n };
  for (let i = 0; i < PER_PRODUCER; i++) {
    if (!writer.isAvailable()) await writer.getAvailableFuture();
    record.key = `k${(i * 7919 + task.subtaskIndex) % 100_003}`;
    record.seq = BigInt(i);
    writer.emit(record);
    if (i % 4096 === 4095) await new Promise((r) => setImmediate(r));
  }
}

async function consume(task: Task) {
  const reader = task.reader<Keyed>();
  const lastSeq = new Map<string, bigint>();
  let count = 0;
  let misrouted = 0;
  let outOfOrder = 0;
  for (;;) {
    const status = reader.pollRecords((r) => {
      count++;
      const owner = assignKeyToParallelOperator(r.key, MAX_PARALLELISM, task.numberOfSubtasks);
      if (owner !== task.subtaskIndex) misrouted++;
      const last = lastSeq.get(r.producer) ?? -1n;
      if (r.seq <= last) outOfOrder++;
      lastSeq.set(r.producer, r.seq);
    }, 2048);
    if (status === PollStatus.END_OF_INPUT) break;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((r) => setImmediate(r));
  }
  return { count, misrouted, outOfOrder };
}

describe("an in-process keyed job through RecordWriter and RecordReader", () => {
  const cluster = new LocalCluster();
  afterEach(() => cluster.close());

  it("routes 10^6 key-group-hashed records from 2 producers to 4 consumers exactly once, in order per channel", async () => {
    const config = localConfiguration({
      "taskmanager.memory.network.min": "8mb",
      "taskmanager.memory.segment-size": "16kb",
    });
    const executor = await cluster.startExecutor(config, {
      invokables: { produce, consume },
      serializers: { keyed: serializer },
      keySelectors: { key: (r: Keyed) => r.key },
    });
    const deployer = await cluster.startDeployer(config);
    const graph = new JobGraph("keyed");
    const producers = graph.addVertex({ name: "P", parallelism: 2, invokable: "produce" });
    const consumers = graph.addVertex({
      name: "C",
      parallelism: 4,
      maxParallelism: MAX_PARALLELISM,
      invokable: "consume",
    });
    graph.connect(producers, consumers, {
      partitioner: { name: "HASH", keySelector: "key" },
      serializer: "keyed",
    });
    const result = await (await deployer.deploy(graph, () => executor)).terminated;
    expect(result.error).toBeUndefined();
    const counts = (result.results.get("C") ?? []) as unknown as {
      count: number;
      misrouted: number;
      outOfOrder: number;
    }[];
    expect(counts.reduce((sum, r) => sum + r.count, 0)).toBe(2 * PER_PRODUCER);
    for (const r of counts) {
      expect(r.misrouted).toBe(0);
      expect(r.outOfOrder).toBe(0);
      expect(r.count).toBeGreaterThan(0);
    }
  }, 60_000);
});
