/**
 * A property over random pipelines: a random chain of maps, filters, flatMaps, partitionings
 * (rebalance, rescale, broadcast, shuffle, global, forward) and keyed operators with keyed state,
 * at random parallelisms and chaining, run as a job in this process, produces exactly the
 * records an in-memory evaluation of the same chain produces (as multisets: the order across
 * subtasks is not fixed, and every keyed operator here emits what does not depend on it).
 */

import { type JobResult, ValueStateDescriptor } from "@sluice/runtime";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DataStream, SingleOutputStreamOperator } from "./data-stream.js";
import { StreamExecutionEnvironment } from "./stream-execution-environment.js";
import { LOADER, localConfiguration } from "./test-support/local-execution.js";
import { Types } from "./types.js";

const RUNS = Number(process.env.SLUICE_DATASTREAM_PIPELINE_RUNS ?? 40);

type Partitioning = "rebalance" | "rescale" | "broadcast" | "shuffle" | "global" | "forward";
type Chaining = "default" | "disable" | "newChain";
type Step =
  | { readonly kind: "map"; readonly a: number; readonly b: number }
  | { readonly kind: "filter"; readonly k: number; readonly r: number }
  | { readonly kind: "flatMap"; readonly copies: number }
  | { readonly kind: "partition"; readonly how: Partitioning }
  | { readonly kind: "keyedCount"; readonly keys: number }
  | { readonly kind: "keyedDistinct"; readonly keys: number };
type Operator = Step & { readonly parallelism: number; readonly chaining: Chaining };

interface Pipeline {
  readonly input: readonly number[];
  readonly sourceParallelism: number;
  readonly chainingEnabled: boolean;
  readonly steps: readonly Operator[];
}

const steps: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant("map" as const),
    a: fc.integer({ min: 1, max: 7 }),
    b: fc.integer({ min: 0, max: 99 }),
  }),
  fc.record({
    kind: fc.constant("filter" as const),
    k: fc.integer({ min: 2, max: 5 }),
    r: fc.integer({ min: 0, max: 1 }),
  }),
  fc.record({ kind: fc.constant("flatMap" as const), copies: fc.integer({ min: 0, max: 2 }) }),
  fc.record({
    kind: fc.constant("partition" as const),
    how: fc.constantFrom<Partitioning>(
      "rebalance",
      "rescale",
      "broadcast",
      "shuffle",
      "global",
      "forward",
    ),
  }),
  fc.record({ kind: fc.constant("keyedCount" as const), keys: fc.integer({ min: 1, max: 20 }) }),
  fc.record({ kind: fc.constant("keyedDistinct" as const), keys: fc.integer({ min: 1, max: 20 }) }),
);

const pipelines: fc.Arbitrary<Pipeline> = fc.record({
  input: fc.array(fc.integer({ min: 0, max: 999 }), { maxLength: 300 }),
  sourceParallelism: fc.integer({ min: 1, max: 3 }),
  chainingEnabled: fc.boolean(),
  steps: fc.array(
    fc
      .record({
        step: steps,
        parallelism: fc.integer({ min: 1, max: 3 }),
        chaining: fc.constantFrom<Chaining>("default", "disable", "newChain"),
      })
      .map(({ step, parallelism, chaining }) => ({ ...step, parallelism, chaining }) as Operator),
    { minLength: 1, maxLength: 6 },
  ),
});

const COUNT = new ValueStateDescriptor("count", Types.NUMBER);
const SEEN = new ValueStateDescriptor("seen", Types.BOOLEAN);

const mapOf = (a: number, b: number) => (x: number) => (a * x + b) % 1000;
const keep = (k: number, r: number) => (x: number) => x % k !== r;
const expand = (copies: number) => (x: number) => Array.from({ length: copies }, (_, i) => x + i);

/** The pipeline as a job; the parallelism forward() needs is the previous operator's. */
function build(pipeline: Pipeline): {
  env: StreamExecutionEnvironment;
  results: (result: JobResult) => number[];
} {
  const env = StreamExecutionEnvironment.create({ name: "random pipeline" });
  if (!pipeline.chainingEnabled) env.disableOperatorChaining();
  let stream: DataStream<number> = env.fromArray(pipeline.input, {
    parallelism: pipeline.sourceParallelism,
  });
  let parallelism = pipeline.sourceParallelism;
  let forward = false;
  // forward() into the collect sink (parallelism 1) from a wider operator is refused, as Flink
  // refuses it: a forward() that no operator follows is left out (it moves no record).
  const lastOperator = pipeline.steps.findLastIndex((step) => step.kind !== "partition");
  for (const [index, step] of pipeline.steps.entries()) {
    if (step.kind === "partition") {
      if (step.how === "forward" && index > lastOperator && parallelism !== 1) continue;
      stream = partitioned(stream, step.how);
      forward = step.how === "forward";
      continue;
    }
    let operator: SingleOutputStreamOperator<number>;
    switch (step.kind) {
      case "map":
        operator = stream.map(mapOf(step.a, step.b));
        break;
      case "filter":
        operator = stream.filter(keep(step.k, step.r));
        break;
      case "flatMap":
        operator = stream.flatMap(expand(step.copies));
        break;
      case "keyedCount": {
        const keys = step.keys;
        operator = stream
          .keyBy((x) => x % keys)
          .process<number>((x, ctx) => {
            const count = ctx.getState(COUNT);
            const n = (count.value() ?? 0) + 1;
            count.update(n);
            ctx.emit((x % keys) * 100_000 + n);
          });
        break;
      }
      case "keyedDistinct": {
        const keys = step.keys;
        operator = stream
          .keyBy((x) => x % keys)
          .process<number>((x, ctx) => {
            const seen = ctx.getState(SEEN);
            if (seen.value() === true) return;
            seen.update(true);
            ctx.emit(x % keys);
          });
        break;
      }
    }
    const keyed = step.kind === "keyedCount" || step.kind === "keyedDistinct";
    parallelism = forward && !keyed ? parallelism : step.parallelism;
    operator.setParallelism(parallelism).returns(Types.NUMBER);
    if (step.chaining === "disable") operator.disableChaining();
    if (step.chaining === "newChain") operator.startNewChain();
    stream = operator;
    forward = false;
  }
  const sink = stream.collect();
  return { env, results: (result) => sink.results(result) };
}

function partitioned(stream: DataStream<number>, how: Partitioning): DataStream<number> {
  switch (how) {
    case "rebalance":
      return stream.rebalance();
    case "rescale":
      return stream.rescale();
    case "broadcast":
      return stream.broadcast();
    case "shuffle":
      return stream.shuffle();
    case "global":
      return stream.global();
    case "forward":
      return stream.forward();
  }
}

/** The same chain, in memory. */
function evaluate(pipeline: Pipeline): number[] {
  let records = [...pipeline.input];
  let pending: Partitioning | undefined;
  let parallelism = pipeline.sourceParallelism;
  for (const step of pipeline.steps) {
    if (step.kind === "partition") {
      pending = step.how;
      continue;
    }
    const keyed = step.kind === "keyedCount" || step.kind === "keyedDistinct";
    parallelism = pending === "forward" && !keyed ? parallelism : step.parallelism;
    // The partitioning closest to the operator counts; keyBy's own overrides them.
    if (pending === "broadcast" && !keyed) {
      records = records.flatMap((x) => Array.from({ length: parallelism }, () => x));
    }
    pending = undefined;
    switch (step.kind) {
      case "map":
        records = records.map(mapOf(step.a, step.b));
        break;
      case "filter":
        records = records.filter(keep(step.k, step.r));
        break;
      case "flatMap":
        records = records.flatMap(expand(step.copies));
        break;
      case "keyedCount": {
        const counts = new Map<number, number>();
        records = records.map((x) => {
          const key = x % step.keys;
          const n = (counts.get(key) ?? 0) + 1;
          counts.set(key, n);
          return key * 100_000 + n;
        });
        break;
      }
      case "keyedDistinct":
        records = [...new Set(records.map((x) => x % step.keys))];
        break;
    }
  }
  return records;
}

describe("random pipelines", () => {
  it("produce the records an in-memory evaluation of the same chain produces", async () => {
    await fc.assert(
      fc.asyncProperty(pipelines, async (pipeline) => {
        const { env, results } = build(pipeline);
        const result = await env.execute(localConfiguration(), { loader: LOADER });
        expect(result.status, String(result.error?.stack)).toBe("FINISHED");
        const byValue = (a: number, b: number) => a - b;
        expect(results(result).sort(byValue)).toEqual(evaluate(pipeline).sort(byValue));
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
  }, 120_000);
});
