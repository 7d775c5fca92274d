import { ErrorCodes, IntermediateDataSetID, isSluiceError, JobID, JobVertexID } from "@sluice/core";
import {
  type DescriptorCodec,
  DescriptorError,
  defineCodec,
  JsonFields,
  type JsonObject,
  type ResultPartitionTypeName,
} from "@sluice/runtime-api";
import type { PartitionerSpec } from "../messages/task-deployment-descriptor.js";
import { PARTITIONER_NAMES, type PartitionerName } from "../partitioner/partitioners.js";
import { type DistributionPattern, type IntermediateDataSet, JobGraph } from "./job-graph.js";

const TYPE_NAME = "JobGraph";
const DISTRIBUTION_PATTERNS: readonly DistributionPattern[] = ["ALL_TO_ALL", "POINTWISE"];

/** The JSON form (version 1) of a {@link JobGraph}: what a job graph store keeps of a job. */
export interface JobGraphJSON {
  /** The codec's version (1). */
  readonly version: number;
  /** 32 hex digits. */
  readonly jobId: string;
  /** The job's name. */
  readonly name: string;
  /** The job module whose user code the job's tasks run (`<module>#<export>`), when it names one. */
  readonly userCodeModule?: string;
  /** In the order they were added. */
  readonly vertices: readonly {
    readonly id: string;
    readonly name: string;
    readonly parallelism: number;
    readonly maxParallelism: number;
    readonly invokable?: string;
    readonly configuration: JsonObject;
  }[];
  /** In the order they were created (a vertex's produced partitions, in order). */
  readonly dataSets: readonly {
    readonly id: string;
    /** The producing vertex's id. */
    readonly producer: string;
    readonly partitionType: ResultPartitionTypeName;
    readonly partitioner: PartitionerSpec;
    readonly serializer: string;
  }[];
  /** In the order they were connected (a vertex's input gates, in order). */
  readonly edges: readonly {
    /** The data set's id. */
    readonly dataSet: string;
    /** The consuming vertex's id. */
    readonly target: string;
    readonly distributionPattern: DistributionPattern;
    readonly numberOfSubpartitions?: number;
  }[];
}

function toJSON(graph: JobGraph): JobGraphJSON {
  return {
    version: 1,
    jobId: graph.jobId.toString(),
    name: graph.name,
    ...(graph.userCodeModule === undefined ? {} : { userCodeModule: graph.userCodeModule }),
    vertices: graph.vertices.map((vertex) => ({
      id: vertex.id.toString(),
      name: vertex.name,
      parallelism: vertex.parallelism,
      maxParallelism: vertex.maxParallelism,
      ...(vertex.invokable === undefined ? {} : { invokable: vertex.invokable }),
      configuration: vertex.configuration,
    })),
    dataSets: graph.dataSets.map((dataSet) => ({
      id: dataSet.id.toString(),
      producer: dataSet.producer.id.toString(),
      partitionType: dataSet.partitionType.name,
      partitioner: { ...dataSet.partitioner },
      serializer: dataSet.serializer,
    })),
    edges: graph.edges.map((edge) => ({
      dataSet: edge.resultId.toString(),
      target: edge.target.id.toString(),
      distributionPattern: edge.distributionPattern,
      ...(edge.numberOfSubpartitions === undefined
        ? {}
        : { numberOfSubpartitions: edge.numberOfSubpartitions }),
    })),
  };
}

/**
 * Rebuilds the graph through its own methods, so a stored graph is checked exactly as one built
 * by hand (names, parallelism, cycles, FORWARD and consumer rules); what they refuse is reported
 * as a bad field of the JSON.
 */
function fromFields(fields: JsonFields): JobGraph {
  const jobId = fields.id("jobId", "a JobID (32 hex digits)", JobID.fromHex);
  const graph = new JobGraph(fields.string("name"), jobId);
  if (fields.has("userCodeModule")) {
    const reference = fields.string("userCodeModule");
    rebuilt("userCodeModule", () => graph.setUserCodeModule(reference));
  }
  const vertices = new Map<string, ReturnType<JobGraph["addVertex"]>>();
  for (const [index, item] of fields.array("vertices").entries()) {
    const path = `vertices[${index}]`;
    const vertex = JsonFields.of(TYPE_NAME, path, item);
    const id = vertex.id("id", "a JobVertexID (32 hex digits)", JobVertexID.fromHex);
    const invokable = vertex.has("invokable") ? vertex.string("invokable") : undefined;
    const configuration = vertex.optionalJsonObject("configuration");
    const added = rebuilt(path, () =>
      graph.addVertex({
        id,
        name: vertex.string("name"),
        parallelism: vertex.integer("parallelism", 1),
        maxParallelism: vertex.integer("maxParallelism", 1),
        ...(invokable === undefined ? {} : { invokable }),
        ...(configuration === undefined ? {} : { configuration }),
      }),
    );
    vertices.set(id.toString(), added);
  }
  const vertexOf = (entry: JsonFields, field: string) => {
    const id = entry.id(field, "a JobVertexID (32 hex digits)", JobVertexID.fromHex).toString();
    const vertex = vertices.get(id);
    if (vertex === undefined) entry.fail(field, "must name a vertex of the graph", id);
    return vertex;
  };
  const dataSets = new Map<string, IntermediateDataSet>();
  for (const [index, item] of fields.array("dataSets").entries()) {
    const path = `dataSets[${index}]`;
    const entry = JsonFields.of(TYPE_NAME, path, item);
    const id = entry.id("id", "an IntermediateDataSetID (32 hex digits)", (text) =>
      IntermediateDataSetID.fromHex(text),
    );
    const producer = vertexOf(entry, "producer");
    const partitionType = entry.partitionType("partitionType");
    const partitioner = readPartitioner(entry.object("partitioner"));
    const serializer = entry.string("serializer");
    const created = rebuilt(path, () =>
      graph.createDataSet(producer, { id, partitionType, partitioner, serializer }),
    );
    dataSets.set(id.toString(), created);
  }
  for (const [index, item] of fields.array("edges").entries()) {
    const path = `edges[${index}]`;
    const entry = JsonFields.of(TYPE_NAME, path, item);
    const dataSetId = entry
      .id("dataSet", "an IntermediateDataSetID (32 hex digits)", (text) =>
        IntermediateDataSetID.fromHex(text),
      )
      .toString();
    const dataSet = dataSets.get(dataSetId);
    if (dataSet === undefined) {
      return entry.fail("dataSet", "must name a data set of the graph", dataSetId);
    }
    const target = vertexOf(entry, "target");
    const pattern = entry.string("distributionPattern");
    if (!(DISTRIBUTION_PATTERNS as readonly string[]).includes(pattern)) {
      entry.fail(
        "distributionPattern",
        `must be one of ${DISTRIBUTION_PATTERNS.join(", ")}`,
        pattern,
      );
    }
    const subpartitions = entry.has("numberOfSubpartitions")
      ? entry.integer("numberOfSubpartitions", 1)
      : undefined;
    rebuilt(path, () =>
      graph.connectDataSet(dataSet, target, {
        distributionPattern: pattern as DistributionPattern,
        ...(subpartitions === undefined ? {} : { numberOfSubpartitions: subpartitions }),
      }),
    );
  }
  for (const dataSet of graph.dataSets) {
    if (dataSet.consumers.length === 0) {
      throw new DescriptorError(
        `${TYPE_NAME}: data set ${dataSet.id} of "${dataSet.producer.name}" has no edge in field "edges"`,
      );
    }
  }
  return graph;
}

function readPartitioner(fields: JsonFields): PartitionerSpec {
  const name = fields.string("name");
  if (!(PARTITIONER_NAMES as readonly string[]).includes(name)) {
    fields.fail("name", `must be one of ${PARTITIONER_NAMES.join(", ")}`, name);
  }
  const keySelector = fields.has("keySelector") ? fields.string("keySelector") : undefined;
  const partitioner = fields.has("partitioner") ? fields.string("partitioner") : undefined;
  return {
    name: name as PartitionerName,
    ...(keySelector === undefined ? {} : { keySelector }),
    ...(partitioner === undefined ? {} : { partitioner }),
  };
}

/** Runs one step of the rebuild; what the graph refuses becomes a DescriptorError naming `path`. */
function rebuilt<T>(path: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    if (isSluiceError(error, ErrorCodes.DESCRIPTOR) || !(error instanceof Error)) throw error;
    throw new DescriptorError(`${TYPE_NAME}: field "${path}" is refused: ${error.message}`, {
      cause: error,
    });
  }
}

/**
 * JSON codec of {@link JobGraph} (versioned like the descriptors; Flink keeps the serialized
 * JobGraph in its JobGraphStore): the cluster's `JobManager` stores every job it runs under high
 * availability in this form, and a job manager that takes over rebuilds it from there. Every
 * field is checked, and the graph is rebuilt through its own methods, so a bad record fails with
 * a DescriptorError (`SLUICE_ERR_DESCRIPTOR`) naming the field, never with a half-built job. The
 * ids of the job, its vertices and data sets are kept.
 */
export const JobGraphCodec: DescriptorCodec<JobGraph, JobGraphJSON> = defineCodec(
  TYPE_NAME,
  toJSON,
  fromFields,
);
