/**
 * The typed API's operators, sources, partitionings and sinks, each run as a job in this process
 * (a TaskExecutor and a JobDeployer of the local plugin), against what they must produce.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import {
  assignKeyToParallelOperator,
  computeDefaultMaxParallelism,
  JobDeployer,
  type JobResult,
  TaskExecutor,
  ValueStateDescriptor,
} from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { DataStream } from "./data-stream.js";
import { OutputTag } from "./output-tag.js";
import { FileSink } from "./sinks/file-sink.js";
import { StreamExecutionEnvironment } from "./stream-execution-environment.js";
import { LOADER, localConfiguration } from "./test-support/local-execution.js";
import { Types } from "./types.js";

async function run(env: StreamExecutionEnvironment): Promise<JobResult> {
  const result = await env.execute(localConfiguration(), { loader: LOADER });
  return result;
}

async function runToEnd(env: StreamExecutionEnvironment): Promise<JobResult> {
  const result = await run(env);
  expect(result.status, String(result.error?.stack)).toBe("FINISHED");
  return result;
}

const sorted = <T>(values: readonly T[]) =>
  [...values].sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "sluice-datastream-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe("a typed job in one process", () => {
  it("runs map, filter and flatMap on every record once", async () => {
    const env = StreamExecutionEnvironment.create({ name: "stateless", parallelism: 2 });
    const out = env
      .fromArray(Array.from({ length: 1000 }, (_, i) => i))
      .map((n) => n * 3)
      .filter((n) => n % 2 === 0)
      .flatMap((n) => [n, -n])
      .collect();
    const result = await runToEnd(env);
    const expected = Array.from({ length: 1000 }, (_, i) => i * 3)
      .filter((n) => n % 2 === 0)
      .flatMap((n) => [n, -n]);
    expect(sorted(out.results(result))).toEqual(sorted(expected));
  });

  it("splits an array, a generator and an async iterable across the source's subtasks, every element once", async () => {
    const env = StreamExecutionEnvironment.create({ name: "sources", parallelism: 3 });
    const fromArray = env
      .fromArray(Array.from({ length: 100 }, (_, i) => `a${i}`))
      .map((value, ctx) => [value, ctx.subtaskIndex] as const)
      .collect();
    const fromGenerator = env
      .fromGenerator(100, (i) => `g${i}`)
      .map((value, ctx) => [value, ctx.subtaskIndex] as const)
      .collect();
    const fromIterable = env
      .fromAsyncIterable(async function* ({ subtaskIndex, numberOfSubtasks, offset }) {
        for (let i = subtaskIndex + offset * numberOfSubtasks; i < 100; i += numberOfSubtasks) {
          await Promise.resolve();
          yield `i${i}`;
        }
      })
      .map((value, ctx) => [value, ctx.subtaskIndex] as const)
      .collect();
    const result = await runToEnd(env);
    for (const [prefix, sink] of [
      ["a", fromArray],
      ["g", fromGenerator],
      ["i", fromIterable],
    ] as const) {
      const records = sink.results(result);
      expect(records.map(([value]) => value).sort()).toEqual(
        Array.from({ length: 100 }, (_, i) => `${prefix}${i}`).sort(),
      );
      // Subtask i of 3 reads the elements i, i + 3, ... (chained: the map runs in the same subtask).
      for (const [value, subtask] of records) expect(Number(value.slice(1)) % 3).toBe(subtask);
    }
  });

  it("passes records between chained operators as the same objects, and serializes them only across tasks", async () => {
    const marker = new Map([["not", "serializable"]]);
    const seen: unknown[] = [];
    const job = (chained: boolean) => {
      const env = StreamExecutionEnvironment.create({ name: `objects ${chained}` });
      const stream = env.fromArray([1, 2, 3]).map((n) => ({ n, marker }));
      (chained ? stream : stream.disableChaining())
        .filter((record) => record.n > 1)
        .addSink((record) => seen.push(record.marker));
      return env;
    };
    const chained = job(true);
    expect(chained.compile().graph.vertices).toHaveLength(1);
    await runToEnd(chained);
    expect(seen).toEqual([marker, marker]);
    expect(seen.every((value) => value === marker)).toBe(true);
    // Unchained, the Map goes over the network with the dynamic serializer, which refuses a Map.
    const result = await run(job(false));
    expect(result.status).toBe("FAILED");
    expect(String(result.error?.message)).toContain(
      "declare the stream's serializer with .returns(...)",
    );
  });

  it("routes records by rebalance, broadcast, forward, global and keyBy to the subtasks Flink's partitioners pick", async () => {
    const env = StreamExecutionEnvironment.create({ name: "partitioning", parallelism: 3 });
    const numbers = env.fromGenerator(300, (i) => i);
    const tag = (stream: DataStream<number>) =>
      stream.map((n, ctx): [number, number] => [n, ctx.subtaskIndex]).collect();
    const rebalanced = tag(numbers.rebalance());
    const broadcast = tag(numbers.broadcast());
    const forwarded = numbers
      .forward()
      .map((n, ctx) => [n, ctx.subtaskIndex] as [number, number])
      .disableChaining()
      .collect();
    const global = tag(numbers.global());
    const keyed = tag(numbers.keyBy((n) => n % 17));
    const result = await runToEnd(env);
    const all = Array.from({ length: 300 }, (_, i) => i);
    const subtasksOf = (records: [number, number][]) => new Set(records.map(([, s]) => s));
    const rebalancedRecords = rebalanced.results(result);
    expect(rebalancedRecords.map(([n]) => n).sort((a, b) => a - b)).toEqual(all);
    expect(subtasksOf(rebalancedRecords)).toEqual(new Set([0, 1, 2]));
    const broadcastRecords = broadcast.results(result);
    expect(broadcastRecords).toHaveLength(900);
    for (let subtask = 0; subtask < 3; subtask++) {
      const own = broadcastRecords.filter(([, s]) => s === subtask).map(([n]) => n);
      expect(own.sort((a, b) => a - b)).toEqual(all);
    }
    for (const [n, subtask] of forwarded.results(result)) expect(n % 3).toBe(subtask);
    expect(subtasksOf(global.results(result))).toEqual(new Set([0]));
    const maxParallelism = computeDefaultMaxParallelism(3);
    for (const [n, subtask] of keyed.results(result)) {
      expect(subtask).toBe(assignKeyToParallelOperator(n % 17, maxParallelism, 3));
    }
  });

  it("keeps a reduce's and an aggregation's value per key in keyed state and emits it after every record", async () => {
    const env = StreamExecutionEnvironment.create({ name: "keyed", parallelism: 2 });
    const words = env.fromArray("a b c a b a d a".split(" "));
    const reduced = words
      .map((word): [string, number] => [word, 1])
      .keyBy(([word]) => word)
      .reduce(([word, a], [, b]) => [word, a + b])
      .collect();
    const averaged = env
      .fromArray([1, 2, 3, 4, 5, 6])
      .keyBy((n) => n % 2)
      .aggregate(
        {
          createAccumulator: () => ({ sum: 0, count: 0 }),
          add: (n, acc) => ({ sum: acc.sum + n, count: acc.count + 1 }),
          getResult: (acc) => acc.sum / acc.count,
        },
        { accumulatorType: Types.OBJECT({ sum: Types.NUMBER, count: Types.NUMBER }) },
      )
      .collect();
    const result = await runToEnd(env);
    expect(sorted(reduced.results(result))).toEqual(
      sorted([
        ["a", 1],
        ["a", 2],
        ["a", 3],
        ["a", 4],
        ["b", 1],
        ["b", 2],
        ["c", 1],
        ["d", 1],
      ]),
    );
    const averages = averaged.results(result);
    expect(averages).toHaveLength(6);
    expect(averages).toContain(3); // 1, 3, 5
    expect(averages).toContain(4); // 2, 4, 6
  });

  it("sends side outputs to the streams that read their tags, chained or not, and drops those nobody reads", async () => {
    const env = StreamExecutionEnvironment.create({ name: "side outputs", parallelism: 2 });
    const odd = new OutputTag<number>("odd", Types.NUMBER);
    const big = new OutputTag<string>("big");
    const unread = new OutputTag<number>("unread");
    const evens = env
      .fromGenerator(100, (i) => i)
      .process<number>((n, ctx) => {
        if (n % 2 === 0) ctx.emit(n);
        else ctx.output(odd, n);
        if (n >= 90) ctx.output(big, `big ${n}`);
        ctx.output(unread, n);
      });
    const evenSink = evens.collect();
    const oddSink = evens.getSideOutput(odd).collect();
    const bigSink = evens
      .getSideOutput(big)
      .rebalance()
      .map((s) => s.toUpperCase())
      .collect();
    const result = await runToEnd(env);
    expect(evenSink.results(result).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => 2 * i),
    );
    expect(oddSink.results(result).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 50 }, (_, i) => 2 * i + 1),
    );
    expect(bigSink.results(result).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `BIG ${90 + i}`).sort(),
    );
  });

  it("gives keyed process functions value, list and map state scoped to the record's key", async () => {
    const env = StreamExecutionEnvironment.create({ name: "keyed process", parallelism: 2 });
    const COUNT = new ValueStateDescriptor("count", Types.NUMBER);
    const out = env
      .fromArray(["x1", "y1", "x2", "x3", "y2"])
      .keyBy((s) => s[0] as string)
      .process<string>((value, ctx) => {
        const count = ctx.getState(COUNT);
        count.update((count.value() ?? 0) + 1);
        ctx.emit(`${ctx.getCurrentKey()}:${count.value()}:${value}`);
      })
      .collect();
    const result = await runToEnd(env);
    const records = out.results(result);
    expect(records.filter((r) => r.startsWith("x")).map((r) => r.split(":")[1])).toEqual([
      "1",
      "2",
      "3",
    ]);
    expect(records.filter((r) => r.startsWith("y")).map((r) => r.split(":")[1])).toEqual([
      "1",
      "2",
    ]);
  });

  it("gives a keyed process function that reads two value states per record each descriptor's own state", async () => {
    const env = StreamExecutionEnvironment.create({ name: "two value states", parallelism: 1 });
    const COUNT = new ValueStateDescriptor("count", Types.NUMBER);
    const SUM = new ValueStateDescriptor("sum", Types.NUMBER);
    const out = env
      .fromArray([1, 2, 3, 4])
      .keyBy(() => "k")
      .process<string>((value, ctx) => {
        // Alternating between two descriptors for every record, as a function that keeps
        // several states does.
        const count = ctx.getState(COUNT);
        const sum = ctx.getState(SUM);
        count.update((count.value() ?? 0) + 1);
        sum.update((sum.value() ?? 0) + value);
        ctx.emit(`${ctx.getState(COUNT).value()}/${ctx.getState(SUM).value()}`);
      })
      .collect();
    const result = await runToEnd(env);
    expect(out.results(result)).toEqual(["1/1", "2/3", "3/6", "4/10"]);
  });

  it("commits each subtask's part file at the end of the input when the job takes no checkpoints", async () => {
    const env = StreamExecutionEnvironment.create({ name: "files", parallelism: 2 });
    env
      .fromArray(["a", "b", "c", "d"])
      .map((word): [string, number] => [word, word.charCodeAt(0)])
      .sinkTo(new FileSink({ directory: dir, format: ([w, n]) => `${w}=${n}\n` }));
    await runToEnd(env);
    const files = (await readdir(dir)).sort();
    // <prefix>-<subtask>-<job id>-<leadership epoch>-<attempt>-<n> (TransactionalFileSink).
    expect(files).toHaveLength(2);
    for (const [subtask, file] of files.entries()) {
      expect(file).toMatch(new RegExp(`^part-${subtask}-[0-9a-f]{32}-[0-9a-f]+-0-0$`));
    }
    const lines = (await Promise.all(files.map((f) => readFile(path.join(dir, f), "utf8"))))
      .join("")
      .trim()
      .split("\n")
      .sort();
    expect(lines).toEqual(["a=97", "b=98", "c=99", "d=100"]);
  });

  it("fails a task whose job module built no operator of the chain's uid, naming the uid and what the module built", async () => {
    const submitted = StreamExecutionEnvironment.create({ name: "versions" });
    submitted
      .fromArray([1])
      .map((n) => n)
      .uid("new-map")
      .addSink(() => {});
    const loaded = StreamExecutionEnvironment.create({ name: "versions" });
    loaded
      .fromArray([1])
      .map((n) => n)
      .uid("old-map")
      .addSink(() => {});
    const executor = await TaskExecutor.start(localConfiguration(), {
      ...loaded.userCode,
      loader: LOADER,
    });
    const deployer = await JobDeployer.start(localConfiguration(), { loader: LOADER });
    try {
      const execution = await deployer.deploy(submitted.createJobGraph(), () => executor);
      const result = await execution.terminated;
      expect(result.status).toBe("FAILED");
      expect(result.error).toMatchObject({ code: ErrorCodes.TASK_DEPLOYMENT });
      expect(result.error?.message).toContain('job "versions" has no operator "new-map" here');
      expect(result.error?.message).toContain("old-map");
    } finally {
      await deployer.close();
      await executor.close();
    }
  });

  it("runs an unbounded source until the job is canceled, then releases everything", async () => {
    const env = StreamExecutionEnvironment.create({ name: "unbounded", parallelism: 2 });
    let received = 0;
    env
      .fromGenerator(Number.POSITIVE_INFINITY, (i) => i)
      .rebalance()
      .addSink(() => {
        received++;
      });
    const executor = await TaskExecutor.start(localConfiguration(), {
      ...env.userCode,
      loader: LOADER,
    });
    const deployer = await JobDeployer.start(localConfiguration(), { loader: LOADER });
    try {
      const execution = await deployer.deploy(env.createJobGraph(), () => executor);
      const deadline = Date.now() + 20_000;
      while (received < 10_000 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(received).toBeGreaterThanOrEqual(10_000);
      execution.cancel("the test has seen enough");
      const result = await execution.terminated;
      expect(result.status).toBe("CANCELED");
    } finally {
      await deployer.close();
      await executor.close();
    }
  });
});
