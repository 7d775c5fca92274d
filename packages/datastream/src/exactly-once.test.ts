/**
 * Exactly once after failures, in one process: jobs with keyed state and exactly-once sinks,
 * failed on purpose after checkpoints completed, restart from the latest one and produce
 * exactly what a run without failures produces.
 */
import { readdirSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ListStateDescriptor, MapStateDescriptor, ValueStateDescriptor } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { RuntimeContext } from "./functions.js";
import { OutputTag } from "./output-tag.js";
import { FileSink } from "./sinks/file-sink.js";
import { StreamExecutionEnvironment } from "./stream-execution-environment.js";
import {
  checkpointingConfiguration,
  failOnceAfterCheckpoints,
  observedRun,
} from "./test-support/local-execution.js";
import { Types } from "./types.js";

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sluice-datastream-eo-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const RECORDS = 20_000;
const KEYS = 97;

describe("a typed job with keyed state, after failures", () => {
  it("source -> rebalance -> map -> keyBy -> process with value, list and map state -> sink is exact after two failures", async () => {
    const VALUES = new ListStateDescriptor("values", Types.NUMBER);
    const COUNT = new ValueStateDescriptor("count", Types.NUMBER);
    const BUCKETS = new MapStateDescriptor("buckets", Types.NUMBER, Types.BOOLEAN);
    const firstSeen = new OutputTag<[number, number]>("first seen");
    let completed = () => 0;
    const failMap = failOnceAfterCheckpoints(() => completed(), 0, 1, 1_000);
    const failProcess = failOnceAfterCheckpoints(() => completed(), 1, 0, 1_000);
    const env = StreamExecutionEnvironment.create({ name: "three stages", parallelism: 2 });
    const counted = env
      .fromGenerator(RECORDS, (i) => i, { name: "Numbers", recordsPerSecond: 10_000 })
      .rebalance()
      .map((n, ctx) => {
        failMap(ctx);
        return { key: n % KEYS, value: n };
      })
      .setParallelism(3)
      .keyBy((record) => record.key)
      .process<[number, number]>((record, ctx) => {
        failProcess(ctx);
        const values = ctx.getListState(VALUES);
        const count = ctx.getState(COUNT);
        values.add(record.value);
        count.update((count.value() ?? 0) + 1);
        if (count.value() !== values.get().length) {
          throw new Error(
            `key ${record.key}: count ${count.value()} but ${values.get().length} values`,
          );
        }
        const buckets = ctx.getMapState(BUCKETS);
        const bucket = record.value % 5;
        if (!buckets.contains(bucket)) {
          buckets.put(bucket, true);
          ctx.output(firstSeen, [record.key, bucket]);
        }
        ctx.emit([record.key, values.get().length]);
      })
      .uid("count");
    const counts = counted.collect();
    const buckets = counted.getSideOutput(firstSeen).collect();
    const run = observedRun(env, checkpointingConfiguration(dir));
    completed = run.completedCheckpoints;
    const result = await run.result;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.restarts).toBe(2);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    const expectedCounts: string[] = [];
    const expectedBuckets = new Set<string>();
    const perKey = new Array<number>(KEYS).fill(0);
    for (let n = 0; n < RECORDS; n++) {
      const key = n % KEYS;
      perKey[key] = (perKey[key] as number) + 1;
      expectedCounts.push(`${key}:${perKey[key]}`);
      expectedBuckets.add(`${key}:${n % 5}`);
    }
    const got = counts.results(result).map(([key, count]) => `${key}:${count}`);
    expect(got.length).toBe(RECORDS);
    expect(got.sort()).toEqual(expectedCounts.sort());
    const gotBuckets = buckets.results(result).map(([key, bucket]) => `${key}:${bucket}`);
    expect(gotBuckets.sort()).toEqual([...expectedBuckets].sort());
  }, 60_000);

  it("writes a keyed word count through the file sink, every running count exactly once, after a failure while a part file waits for its checkpoint", async () => {
    const words = "the quick brown fox jumps over the lazy dog the end".split(" ");
    const LINES = 3_000;
    let completed = () => 0;
    const out = path.join(dir, "out");
    // The sink's task fails while a part file it pre-committed waits for its checkpoint to
    // complete: a restore must neither lose nor repeat what that file holds.
    let failed = false;
    let seen = 0;
    const failWhilePending = (context: RuntimeContext) => {
      if (failed || context.attemptNumber !== 0 || ++seen % 20 !== 0 || completed() < 2) return;
      if (!readdirSync(out).some((file) => file.endsWith(".pending"))) return;
      failed = true;
      throw new Error(`${context.taskName}: injected failure while a part file is pending`);
    };
    const env = StreamExecutionEnvironment.create({ name: "word count", parallelism: 2 });
    env
      .fromGenerator(LINES, (i) => words.slice(i % 5, (i % 5) + 6).join(" "), {
        recordsPerSecond: 2_000,
      })
      .flatMap((line) => line.split(" "))
      .map((word): [string, number] => [word, 1])
      .keyBy(([word]) => word)
      .reduce(([word, a], [, b]) => [word, a + b])
      .map((count, ctx) => {
        failWhilePending(ctx);
        return count;
      })
      .sinkTo(new FileSink({ directory: out, format: ([word, n]) => `${word} ${n}\n` }));
    const run = observedRun(env, checkpointingConfiguration(path.join(dir, "checkpoints")));
    completed = run.completedCheckpoints;
    const result = await run.result;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    const files = await readdir(out);
    expect(files.filter((file) => file.startsWith("."))).toEqual([]);
    const lines = (await Promise.all(files.map((file) => readFile(path.join(out, file), "utf8"))))
      .join("")
      .trim()
      .split("\n");
    const totals = new Map<string, number>();
    for (let i = 0; i < LINES; i++) {
      for (const word of words.slice(i % 5, (i % 5) + 6))
        totals.set(word, (totals.get(word) ?? 0) + 1);
    }
    const expected = [...totals].flatMap(([word, total]) =>
      Array.from({ length: total }, (_, i) => `${word} ${i + 1}`),
    );
    expect(lines.length).toBe(expected.length);
    expect(lines.sort()).toEqual(expected.sort());
  }, 60_000);

  it("resumes an async iterable source at the offset it checkpointed, every record counted once", async () => {
    const RECORDS_PER_SUBTASK = 4_000;
    let completed = () => 0;
    const fail = failOnceAfterCheckpoints(() => completed(), 0, 0, 1_000);
    const env = StreamExecutionEnvironment.create({ name: "async source", parallelism: 2 });
    const counts = env
      .fromAsyncIterable(async function* ({ subtaskIndex, offset }) {
        for (let i = offset; i < RECORDS_PER_SUBTASK; i++) {
          // A source that waits for its records, as one reading a socket or a file does.
          if (i % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
          yield subtaskIndex * RECORDS_PER_SUBTASK + i;
        }
      })
      .map((n, ctx) => {
        fail(ctx);
        return n;
      })
      .keyBy((n) => n % 10)
      .process<number>((_n, ctx) => {
        const count = ctx.getState(new ValueStateDescriptor("count", Types.NUMBER));
        count.update((count.value() ?? 0) + 1);
        ctx.emit((ctx.getCurrentKey() as number) * 100_000 + (count.value() as number));
      })
      .collect();
    const run = observedRun(env, checkpointingConfiguration(dir));
    completed = run.completedCheckpoints;
    const result = await run.result;
    expect(result.status, String(result.error?.stack)).toBe("FINISHED");
    expect(result.restarts).toBe(1);
    expect(result.checkpoints.restoredFrom).toBeDefined();
    const expected: number[] = [];
    for (let key = 0; key < 10; key++) {
      for (let c = 1; c <= (2 * RECORDS_PER_SUBTASK) / 10; c++) expected.push(key * 100_000 + c);
    }
    expect(counts.results(result).sort((a, b) => a - b)).toEqual(expected);
  }, 60_000);
});
