import { ErrorCodes } from "@sluice/core";
import { ResultPartitionType } from "@sluice/runtime-api";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type JobGraph as Graph, JobGraph } from "./job-graph.js";
import { JobGraphCodec, type JobGraphJSON } from "./job-graph-codec.js";

/** Source(3) → REBALANCE → Enrich(2) → HASH → Count(2) → FORWARD → Sink(2), and a blocking side output read twice. */
function sampleGraph(): Graph {
  const graph = new JobGraph("a user's job", "00112233445566778899aabbccddeeff");
  graph.setUserCodeModule("my-app/jobs#wordCount");
  const source = graph.addVertex({
    name: "Source",
    parallelism: 3,
    invokable: "source",
    configuration: { records: 200_000, nested: { list: [1, "two", null, true] } },
  });
  const enrich = graph.addVertex({ name: "Enrich", parallelism: 2, invokable: "enrich" });
  const count = graph.addVertex({
    name: "Count",
    parallelism: 2,
    maxParallelism: 16,
    invokable: "count",
  });
  const sink = graph.addVertex({ name: "Sink", parallelism: 2 });
  const audit = graph.addVertex({ name: "Audit", parallelism: 1, invokable: "audit" });
  const replay = graph.addVertex({ name: "Replay", parallelism: 1, invokable: "audit" });
  graph.connect(source, enrich, { partitioner: { name: "REBALANCE" }, serializer: "string" });
  graph.connect(enrich, count, {
    partitioner: { name: "HASH", keySelector: "word" },
    serializer: "string",
    numberOfSubpartitions: 4,
  });
  graph.connect(count, sink, { partitioner: { name: "FORWARD" }, serializer: "json" });
  const side = graph.createDataSet(source, {
    partitioner: { name: "CUSTOM", keySelector: "value", partitioner: "mine" },
    serializer: "int32",
    partitionType: ResultPartitionType.BLOCKING,
  });
  graph.connectDataSet(side, audit);
  graph.connectDataSet(side, replay);
  return graph;
}

/** The graph as plain data, for comparing two graphs. */
function shapeOf(graph: Graph) {
  return {
    ...JobGraphCodec.toJSON(graph),
    inputs: graph.vertices.map((v) => graph.inputsOf(v).map((e) => e.resultId.toString())),
    produced: graph.vertices.map((v) => graph.producedDataSetsOf(v).map((d) => d.id.toString())),
    regions: graph.pipelinedRegions().map((region) => region.map((v) => v.name)),
  };
}

describe("JobGraphCodec", () => {
  it("rebuilds a graph with the same ids, vertices, data sets, edges, gate and partition order, through JSON text", () => {
    const graph = sampleGraph();
    const rebuilt = JobGraphCodec.deserialize(JobGraphCodec.serialize(graph));
    expect(rebuilt).not.toBe(graph);
    expect(rebuilt.jobId.equals(graph.jobId)).toBe(true);
    expect(rebuilt.userCodeModule).toBe("my-app/jobs#wordCount");
    expect(shapeOf(rebuilt)).toEqual(shapeOf(graph));
    expect(rebuilt.inputsOutputsOf(rebuilt.vertices[2] as Graph["vertices"][number])).toEqual(
      graph.inputsOutputsOf(graph.vertices[2] as Graph["vertices"][number]),
    );
  });

  it("rebuilds random chains and fans of vertices exactly (property)", () => {
    const partitioners = fc.constantFrom("REBALANCE", "HASH", "BROADCAST", "SHUFFLE", "GLOBAL");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 1, max: 6 }), partitioners), {
          minLength: 1,
          maxLength: 6,
        }),
        (stages) => {
          const graph = new JobGraph("random");
          let previous = graph.addVertex({ name: "v0", parallelism: 2, invokable: "first" });
          for (const [i, [parallelism, partitioner]] of stages.entries()) {
            const next = graph.addVertex({ name: `v${i + 1}`, parallelism, invokable: "next" });
            graph.connect(previous, next, {
              partitioner:
                partitioner === "HASH"
                  ? { name: "HASH", keySelector: "value" }
                  : { name: partitioner },
              serializer: "int32",
              ...(i % 2 === 0 ? { partitionType: ResultPartitionType.BLOCKING } : {}),
            });
            previous = next;
          }
          const rebuilt = JobGraphCodec.fromJSON(JSON.parse(JobGraphCodec.serialize(graph)));
          expect(shapeOf(rebuilt)).toEqual(shapeOf(graph));
        },
      ),
      { numRuns: 100 },
    );
  });

  it("refuses bad input with SLUICE_ERR_DESCRIPTOR naming the field", () => {
    const good = JobGraphCodec.toJSON(sampleGraph());
    const mutate = (change: (json: { -readonly [K in keyof JobGraphJSON]: unknown }) => void) => {
      const json = structuredClone(good) as unknown as {
        -readonly [K in keyof JobGraphJSON]: unknown;
      };
      change(json);
      return json;
    };
    // biome-ignore lint/suspicious/noExplicitAny: editing the JSON form by hand.
    const at = (json: { [key: string]: unknown }, key: string, index: number): any =>
      (json[key] as unknown[])[index];
    const cases: [string, unknown][] = [
      [
        '"version"',
        mutate((j) => {
          j.version = 2;
        }),
      ],
      [
        '"jobId"',
        mutate((j) => {
          j.jobId = "not-hex";
        }),
      ],
      [
        '"name"',
        mutate((j) => {
          j.name = 7;
        }),
      ],
      [
        '"userCodeModule"',
        mutate((j) => {
          j.userCodeModule = "my-app/jobs#";
        }),
      ],
      [
        '"vertices[1].parallelism"',
        mutate((j) => {
          at(j, "vertices", 1).parallelism = 0;
        }),
      ],
      [
        '"vertices[0].configuration"',
        mutate((j) => {
          at(j, "vertices", 0).configuration = [1];
        }),
      ],
      [
        '"vertices[3]" is refused',
        mutate((j) => {
          at(j, "vertices", 3).name = "Source";
        }),
      ],
      [
        '"dataSets[0].producer"',
        mutate((j) => {
          at(j, "dataSets", 0).producer = "ff".repeat(16);
        }),
      ],
      [
        '"dataSets[1].partitionType"',
        mutate((j) => {
          at(j, "dataSets", 1).partitionType = "FAST";
        }),
      ],
      [
        '"dataSets[2].partitioner.name"',
        mutate((j) => {
          at(j, "dataSets", 2).partitioner = { name: "ROUND" };
        }),
      ],
      [
        '"edges[0].distributionPattern"',
        mutate((j) => {
          at(j, "edges", 0).distributionPattern = "SOME";
        }),
      ],
      [
        '"edges[1].dataSet"',
        mutate((j) => {
          at(j, "edges", 1).dataSet = "00".repeat(16);
        }),
      ],
      // FORWARD from Count (2) to a Sink of parallelism 3: the graph's own rule.
      [
        '"edges[2]" is refused',
        mutate((j) => {
          at(j, "vertices", 3).parallelism = 3;
        }),
      ],
      [
        'has no edge in field "edges"',
        mutate((j) => {
          (j.edges as unknown[]).splice(3, 2);
        }),
      ],
    ];
    for (const [field, json] of cases) {
      expect(() => JobGraphCodec.fromJSON(json), field).toThrow(
        expect.objectContaining({
          code: ErrorCodes.DESCRIPTOR,
          message: expect.stringContaining(field),
        }),
      );
    }
    expect(() => JobGraphCodec.deserialize("{")).toThrow(
      expect.objectContaining({
        code: ErrorCodes.DESCRIPTOR,
        message: expect.stringContaining("not valid JSON"),
      }),
    );
  });
});
