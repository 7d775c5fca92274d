import { ErrorCodes, type TypeSerializer } from "@sluice/core";
import type { JobGraph } from "@sluice/runtime";
import { describe, expect, it } from "vitest";
import { OutputTag } from "../output-tag.js";
import { StreamExecutionEnvironment } from "../stream-execution-environment.js";
import { Types } from "../types.js";
import { CHAIN_CONFIG_KEY, type ChainConfig } from "./chain-config.js";

/** The graph's vertices as `name (parallelism)`. */
function vertices(graph: JobGraph): string[] {
  return graph.vertices.map((vertex) => `${vertex.name} (${vertex.parallelism})`);
}

/** The graph's edges as `source -PARTITIONER/serializer-> target`. */
function edges(graph: JobGraph): string[] {
  return graph.edges.map(
    (edge) =>
      `${edge.source.name} -${edge.partitioner.name}/${edge.serializer}-> ${edge.target.name}`,
  );
}

function chainOf(graph: JobGraph, name: string): ChainConfig {
  const vertex = graph.vertices.find((v) => v.name === name);
  return vertex?.configuration[CHAIN_CONFIG_KEY] as unknown as ChainConfig;
}

const numbers = (env: StreamExecutionEnvironment, parallelism?: number) =>
  env.fromGenerator(100, (i) => i, {
    name: "Numbers",
    ...(parallelism === undefined ? {} : { parallelism }),
  });

describe("the StreamingJobGraphGenerator", () => {
  it("chains a source and operators of equal parallelism connected FORWARD into one vertex named as Flink names chains", () => {
    const env = StreamExecutionEnvironment.create({ name: "chain", parallelism: 2 });
    numbers(env)
      .map((n) => n + 1)
      .filter((n) => n % 2 === 0)
      .addSink(() => {});
    const { graph } = env.compile();
    expect(vertices(graph)).toEqual(["Source: Numbers -> Map -> Filter -> Sink: Unnamed (2)"]);
    expect(graph.edges).toEqual([]);
    const chain = chainOf(graph, "Source: Numbers -> Map -> Filter -> Sink: Unnamed");
    expect(chain.operators).toEqual([
      { uid: "source-0", outputs: [{ chained: "map-1" }], sideOutputs: [] },
      { uid: "map-1", outputs: [{ chained: "filter-2" }], sideOutputs: [] },
      { uid: "filter-2", outputs: [{ chained: "sink-3" }], sideOutputs: [] },
      { uid: "sink-3", outputs: [], sideOutputs: [] },
    ]);
  });

  it("cuts chains at keyBy, rebalance, broadcast, rescale and a change of parallelism, with Flink's partitioner on each edge", () => {
    const env = StreamExecutionEnvironment.create({ name: "cuts", parallelism: 2 });
    const mapped = numbers(env)
      .rebalance()
      .map((n) => n * 2)
      .name("Double");
    mapped
      .keyBy((n) => n % 10)
      .reduce((a, b) => a + b)
      .broadcast()
      .map((n) => n)
      .name("Copy")
      .rescale()
      .filter(() => true)
      .setParallelism(4)
      .map((n) => `${n}`)
      .name("Text")
      .setParallelism(3)
      .addSink(() => {})
      .setParallelism(3);
    const { graph } = env.compile();
    expect(vertices(graph)).toEqual([
      "Source: Numbers (2)",
      "Double (2)",
      "Keyed Reduce (2)",
      "Copy (2)",
      "Filter (4)",
      "Text -> Sink: Unnamed (3)",
    ]);
    expect(edges(graph)).toEqual([
      "Source: Numbers -REBALANCE/dynamic-> Double",
      "Double -HASH/dynamic-> Keyed Reduce",
      "Keyed Reduce -BROADCAST/dynamic-> Copy",
      "Copy -RESCALE/dynamic-> Filter",
      "Filter -REBALANCE/dynamic-> Text -> Sink: Unnamed",
    ]);
    const hash = graph.edges[1];
    expect(hash?.partitioner.keySelector).toBe("datastream:cuts:keyBy-3");
    expect(Object.keys(env.userCode.keySelectors ?? {})).toEqual(["datastream:cuts:keyBy-3"]);
  });

  it("runs an operator alone after disableChaining, and starts a new chain at startNewChain", () => {
    const env = StreamExecutionEnvironment.create({ name: "strategies" });
    numbers(env)
      .map((n) => n)
      .name("A")
      .map((n) => n)
      .name("B")
      .disableChaining()
      .map((n) => n)
      .name("C")
      .map((n) => n)
      .name("D")
      .startNewChain()
      .map((n) => n)
      .name("E")
      .addSink(() => {});
    expect(vertices(env.compile().graph)).toEqual([
      "Source: Numbers -> A (1)",
      "B (1)",
      "C (1)",
      "D -> E -> Sink: Unnamed (1)",
    ]);
  });

  it("gives every operator a vertex of its own when chaining is disabled for the environment", () => {
    const env = StreamExecutionEnvironment.create({ name: "unchained" }).disableOperatorChaining();
    numbers(env)
      .map((n) => n)
      .addSink(() => {});
    const { graph } = env.compile();
    expect(vertices(graph)).toEqual(["Source: Numbers (1)", "Map (1)", "Sink: Unnamed (1)"]);
    expect(edges(graph)).toEqual([
      "Source: Numbers -FORWARD/dynamic-> Map",
      "Map -FORWARD/dynamic-> Sink: Unnamed",
    ]);
  });

  it("names a chain that fans out as Flink does, A -> (B, C), and lists both outputs of the fan-out operator", () => {
    const env = StreamExecutionEnvironment.create({ name: "fan-out" });
    const source = numbers(env);
    source
      .map((n) => n)
      .name("B")
      .addSink(() => {});
    source
      .filter(() => true)
      .name("C")
      .addSink(() => {});
    const { graph } = env.compile();
    expect(vertices(graph)).toEqual([
      "Source: Numbers -> (B -> Sink: Unnamed, C -> Sink: Unnamed) (1)",
    ]);
    const [head] = chainOf(graph, graph.vertices[0]?.name as string).operators;
    expect(head?.outputs).toEqual([{ chained: "map-1" }, { chained: "filter-3" }]);
  });

  it("chains side outputs and routes them to the tag's consumers", () => {
    const env = StreamExecutionEnvironment.create({ name: "side" });
    const odd = new OutputTag<number>("odd", Types.NUMBER);
    const evens = numbers(env).process<number>((n, ctx) => {
      if (n % 2 === 0) ctx.emit(n);
      else ctx.output(odd, n);
    });
    evens.addSink(() => {});
    evens
      .getSideOutput(odd)
      .rebalance()
      .addSink(() => {})
      .setParallelism(2);
    const { graph } = env.compile();
    expect(vertices(graph)).toEqual([
      "Source: Numbers -> Process -> Sink: Unnamed (1)",
      "Sink: Unnamed (2)",
    ]);
    expect(edges(graph)).toEqual([
      "Source: Numbers -> Process -> Sink: Unnamed -REBALANCE/float64-> Sink: Unnamed",
    ]);
    const process = chainOf(graph, graph.vertices[0]?.name as string).operators[1];
    expect(process).toEqual({
      uid: "process-1",
      outputs: [{ chained: "sink-2" }],
      sideOutputs: [{ tag: "odd", outputs: [{ network: 0 }] }],
    });
  });

  it("puts on each edge the serializer declared with returns, inherited through filter and keyBy, inferred from an array, else dynamic", () => {
    const env = StreamExecutionEnvironment.create({
      name: "serializers",
    }).disableOperatorChaining();
    env
      .fromArray(["a", "b"])
      .filter(() => true)
      .map((word): [string, number] => [word, 1])
      .returns(Types.TUPLE<[string, number]>(Types.STRING, Types.NUMBER))
      .keyBy(([word]) => word)
      .map(([word]) => word.length)
      .addSink(() => {});
    const { graph } = env.compile();
    expect(graph.edges.map((edge) => edge.serializer)).toEqual([
      "string",
      "string",
      "tuple<string,float64>",
      "dynamic",
    ]);
    const registered = env.userCode.serializers as Record<string, TypeSerializer<unknown>>;
    expect(Object.keys(registered).sort()).toEqual(["dynamic", "string", "tuple<string,float64>"]);
  });

  it("gives a keyed vertex the environment's max parallelism, or the operator's own", () => {
    const env = StreamExecutionEnvironment.create({
      name: "max",
      parallelism: 2,
      maxParallelism: 64,
    });
    const keyed = numbers(env).keyBy((n) => n);
    keyed
      .reduce((a, b) => a + b)
      .name("Sum")
      .addSink(() => {});
    keyed
      .reduce((a, b) => Math.max(a, b))
      .name("Max")
      .setMaxParallelism(16)
      .addSink(() => {});
    const { graph } = env.compile();
    expect(graph.vertices.map((v) => [v.name, v.maxParallelism])).toEqual([
      ["Source: Numbers", 64],
      ["Sum -> Sink: Unnamed", 64],
      ["Max -> Sink: Unnamed", 16],
    ]);
  });

  it("refuses forward() between operators of different parallelism, naming both", () => {
    const env = StreamExecutionEnvironment.create({ name: "forward" });
    numbers(env, 2)
      .forward()
      .map((n) => n)
      .setParallelism(3)
      .addSink(() => {});
    expect(() => env.compile()).toThrow(
      expect.objectContaining({
        code: ErrorCodes.INVALID_ARGUMENT,
        message: expect.stringContaining(
          'forward partitioning does not allow a change of parallelism: "Numbers" (parallelism 2) -> "Map" (parallelism 3)',
        ),
      }),
    );
  });

  it("refuses two operators with one uid", () => {
    const env = StreamExecutionEnvironment.create({ name: "uids" });
    numbers(env)
      .map((n) => n)
      .uid("x")
      .map((n) => n)
      .name("Other")
      .uid("x");
    expect(() => env.compile()).toThrow(/operators "Map" and "Other" have the same uid "x"/);
  });

  it("makes vertex names unique with a suffix, as a JobGraph needs", () => {
    const env = StreamExecutionEnvironment.create({ name: "names" }).disableOperatorChaining();
    numbers(env)
      .map((n) => n)
      .map((n) => n)
      .addSink(() => {});
    expect(vertices(env.compile().graph)).toEqual([
      "Source: Numbers (1)",
      "Map (1)",
      "Map (2) (1)",
      "Sink: Unnamed (1)",
    ]);
  });
});
