import {
  IllegalArgumentError,
  IntermediateDataSetID,
  IntermediateResultPartitionID,
  JobID,
  JobVertexID,
} from "@sluice/core";
import {
  type IndexRange,
  type JsonObject,
  ResultPartitionType,
  UPPER_BOUND_MAX_PARALLELISM,
} from "@sluice/runtime-api";
import { computeDefaultMaxParallelism } from "../partitioner/key-group-range-assignment.js";
import type { PartitionerSpec } from "../taskexecutor/task-deployment-descriptor.js";

/** One operator of a job, run as `parallelism` subtasks (Flink's `JobVertex`). */
export interface JobVertex {
  /** The vertex id (part of every execution attempt id). */
  readonly id: JobVertexID;
  /** The name tasks are shown with (`Count` → `Count (1/2)#0`). */
  readonly name: string;
  /** Number of subtasks. */
  readonly parallelism: number;
  /** Key groups of keyed input this vertex reads: the HASH partitioners' max parallelism. */
  readonly maxParallelism: number;
  /** The invokable the subtasks run, by the name registered with the TaskExecutors. */
  readonly invokable?: string;
  /** Parameters every subtask gets (`Task.configuration`). */
  readonly configuration: JsonObject;
}

/**
 * How producer subtasks connect to consumer subtasks (Flink's `DistributionPattern`): every
 * producer to every consumer, or each consumer to a contiguous share of the producers.
 */
export type DistributionPattern = "ALL_TO_ALL" | "POINTWISE";

/** A data exchange between two vertices: one intermediate data set (Flink's `JobEdge`). */
export interface JobEdge {
  /** The producing vertex. */
  readonly source: JobVertex;
  /** The consuming vertex. */
  readonly target: JobVertex;
  /** The data set exchanged; its partitions are the source subtasks' outputs. */
  readonly resultId: IntermediateDataSetID;
  /** Pipelined (streamed while produced) or blocking (read after the producer finished). */
  readonly partitionType: ResultPartitionType;
  /** How producer subtasks map to consumer subtasks. */
  readonly distributionPattern: DistributionPattern;
  /** How records are routed to subpartitions. */
  readonly partitioner: PartitionerSpec;
  /** The records' serializer, by name. */
  readonly serializer: string;
  /** ALL_TO_ALL: the subpartitions of each producer's partition, when set (see `JobEdgeSpec`). */
  readonly numberOfSubpartitions?: number;
}

/** What {@link JobGraph.addVertex} takes. */
export interface JobVertexSpec {
  readonly name: string;
  readonly parallelism: number;
  /** Default: Flink's `computeDefaultMaxParallelism(parallelism)` (at least 128). */
  readonly maxParallelism?: number;
  readonly invokable?: string;
  readonly configuration?: JsonObject;
}

/** What {@link JobGraph.connect} takes. */
export interface JobEdgeSpec {
  readonly partitioner: PartitionerSpec;
  readonly serializer: string;
  /** Default PIPELINED_BOUNDED. */
  readonly partitionType?: ResultPartitionType;
  /** Default ALL_TO_ALL, except POINTWISE for FORWARD and RESCALE partitioners. */
  readonly distributionPattern?: DistributionPattern;
  /**
   * ALL_TO_ALL only: the subpartitions of each producer's partition (default: one per consumer
   * subtask). With more subpartitions than consumers, each consumer reads a contiguous range of
   * them through one gate, the ranges split as evenly as possible (as Flink's adaptive batch
   * scheduler assigns subpartition ranges); e.g. one consumer subtask reading a keyed partition of
   * 4 subpartitions over 4 input channels. HASH routing needs at most the target's max
   * parallelism (its key groups).
   */
  readonly numberOfSubpartitions?: number;
}

/** Which producer subtasks a consumer subtask reads, and which of their subpartitions. */
export interface ConsumedPartitions {
  /** Producer subtask indexes, in channel order. */
  readonly producers: readonly number[];
  /** The subpartitions read from each of them. */
  readonly subpartitions: IndexRange;
}

/**
 * A job: vertices connected by edges (Flink's `JobGraph`). The job side's `JobDeployer` turns it
 * into task deployment descriptors.
 */
export class JobGraph {
  /** The job's id. */
  readonly jobId: JobID;
  /** The job's name. */
  readonly name: string;
  private readonly vertexList: JobVertex[] = [];
  private readonly edgeList: JobEdge[] = [];

  constructor(name: string, jobId = new JobID()) {
    this.name = name;
    this.jobId = jobId;
  }

  /** The vertices, in the order they were added. */
  get vertices(): readonly JobVertex[] {
    return this.vertexList;
  }

  /** The edges, in the order they were added. */
  get edges(): readonly JobEdge[] {
    return this.edgeList;
  }

  /**
   * Adds a vertex.
   *
   * @throws IllegalArgumentError for an empty or duplicate name or an invalid parallelism.
   */
  addVertex(spec: JobVertexSpec): JobVertex {
    if (typeof spec.name !== "string" || spec.name === "") {
      throw new IllegalArgumentError("a job vertex needs a non-empty name");
    }
    if (this.vertexList.some((vertex) => vertex.name === spec.name)) {
      throw new IllegalArgumentError(`job ${this.name} already has a vertex named "${spec.name}"`);
    }
    if (!Number.isInteger(spec.parallelism) || spec.parallelism < 1) {
      throw new IllegalArgumentError(
        `vertex "${spec.name}": parallelism must be an integer >= 1, got ${spec.parallelism}`,
      );
    }
    const maxParallelism = spec.maxParallelism ?? computeDefaultMaxParallelism(spec.parallelism);
    if (
      !Number.isInteger(maxParallelism) ||
      maxParallelism < spec.parallelism ||
      maxParallelism > UPPER_BOUND_MAX_PARALLELISM
    ) {
      throw new IllegalArgumentError(
        `vertex "${spec.name}": maxParallelism must be an integer in [parallelism ${spec.parallelism}, ${UPPER_BOUND_MAX_PARALLELISM}], got ${maxParallelism}`,
      );
    }
    const vertex: JobVertex = Object.freeze({
      id: new JobVertexID(),
      name: spec.name,
      parallelism: spec.parallelism,
      maxParallelism,
      ...(spec.invokable === undefined ? {} : { invokable: spec.invokable }),
      configuration: spec.configuration ?? {},
    });
    this.vertexList.push(vertex);
    return vertex;
  }

  /**
   * Connects `source` to `target` with a new data set.
   *
   * @throws IllegalArgumentError for vertices of another graph, a cycle, or a FORWARD edge
   *   between vertices of different parallelism.
   */
  connect(source: JobVertex, target: JobVertex, spec: JobEdgeSpec): JobEdge {
    for (const vertex of [source, target]) {
      if (!this.vertexList.includes(vertex)) {
        throw new IllegalArgumentError(`vertex "${vertex.name}" is not part of job ${this.name}`);
      }
    }
    if (source === target || this.reaches(target, source)) {
      throw new IllegalArgumentError(
        `connecting "${source.name}" to "${target.name}" would make job ${this.name} cyclic`,
      );
    }
    const pointwiseByDefault =
      spec.partitioner.name === "FORWARD" || spec.partitioner.name === "RESCALE";
    const distributionPattern =
      spec.distributionPattern ?? (pointwiseByDefault ? "POINTWISE" : "ALL_TO_ALL");
    if (spec.partitioner.name === "FORWARD" && source.parallelism !== target.parallelism) {
      throw new IllegalArgumentError(
        `FORWARD from "${source.name}" (parallelism ${source.parallelism}) to "${target.name}" (parallelism ${target.parallelism}) needs equal parallelism`,
      );
    }
    const subpartitions = spec.numberOfSubpartitions;
    if (subpartitions !== undefined)
      checkSubpartitions(subpartitions, spec, distributionPattern, target);
    const edge: JobEdge = Object.freeze({
      source,
      target,
      resultId: new IntermediateDataSetID(),
      partitionType: spec.partitionType ?? ResultPartitionType.PIPELINED_BOUNDED,
      distributionPattern,
      partitioner: spec.partitioner,
      serializer: spec.serializer,
      ...(subpartitions === undefined ? {} : { numberOfSubpartitions: subpartitions }),
    });
    this.edgeList.push(edge);
    return edge;
  }

  /** The edges `vertex` reads, in the order they were added (its input gates). */
  inputsOf(vertex: JobVertex): JobEdge[] {
    return this.edgeList.filter((edge) => edge.target === vertex);
  }

  /** The edges `vertex` writes, in the order they were added (its produced partitions). */
  outputsOf(vertex: JobVertex): JobEdge[] {
    return this.edgeList.filter((edge) => edge.source === vertex);
  }

  /** The vertices with every producer before its consumers. */
  topologicalOrder(): JobVertex[] {
    const order: JobVertex[] = [];
    const visit = (vertex: JobVertex) => {
      if (order.includes(vertex)) return;
      for (const edge of this.inputsOf(vertex)) visit(edge.source);
      order.push(vertex);
    };
    for (const vertex of this.vertexList) visit(vertex);
    return order;
  }

  private reaches(from: JobVertex, to: JobVertex): boolean {
    return this.outputsOf(from).some((edge) => edge.target === to || this.reaches(edge.target, to));
  }
}

/** Checks `JobEdgeSpec.numberOfSubpartitions` against the edge it is set on. */
function checkSubpartitions(
  subpartitions: number,
  spec: JobEdgeSpec,
  pattern: DistributionPattern,
  target: JobVertex,
): void {
  const what = `numberOfSubpartitions ${subpartitions} of the edge to "${target.name}"`;
  if (pattern !== "ALL_TO_ALL") {
    throw new IllegalArgumentError(`${what}: only ALL_TO_ALL edges take a number of subpartitions`);
  }
  const keyed = spec.partitioner.name === "HASH";
  const max = keyed ? target.maxParallelism : UPPER_BOUND_MAX_PARALLELISM;
  if (
    !Number.isInteger(subpartitions) ||
    subpartitions < target.parallelism ||
    subpartitions > max
  ) {
    throw new IllegalArgumentError(
      `${what}: must be an integer in [parallelism ${target.parallelism}, ${keyed ? `max parallelism ${max} (the key groups of HASH)` : max}]`,
    );
  }
}

/** The id of partition `producerSubtask` of `edge`'s data set. */
export function partitionIdOf(
  edge: JobEdge,
  producerSubtask: number,
): IntermediateResultPartitionID {
  return new IntermediateResultPartitionID(edge.resultId, producerSubtask);
}

/**
 * The number of subpartitions of producer `producerSubtask`'s partition: for ALL_TO_ALL the
 * edge's `numberOfSubpartitions`, by default one per consumer; for POINTWISE, one per consumer it
 * feeds (at least one).
 */
export function numberOfSubpartitions(edge: JobEdge, producerSubtask: number): number {
  const p = edge.source.parallelism;
  const q = edge.target.parallelism;
  if (edge.distributionPattern === "ALL_TO_ALL") return edge.numberOfSubpartitions ?? q;
  if (p >= q) return 1;
  return firstConsumer(producerSubtask + 1, p, q) - firstConsumer(producerSubtask, p, q);
}

/** The first consumer producer `i` feeds when p < q: consumers are split into p contiguous runs. */
function firstConsumer(i: number, p: number, q: number): number {
  return Math.ceil((i * q) / p);
}

/**
 * What consumer `consumerSubtask` of `edge` reads (Flink's pointwise and all-to-all connection
 * rules): for ALL_TO_ALL every producer's subpartition `consumerSubtask` (its even share of the
 * subpartitions when the edge has more than consumers); for POINTWISE with
 * p ≥ q producers a contiguous run of them (one subpartition each), with p < q the one producer
 * it shares with its neighbours and its own subpartition of it.
 */
export function consumedPartitionsOf(edge: JobEdge, consumerSubtask: number): ConsumedPartitions {
  const p = edge.source.parallelism;
  const q = edge.target.parallelism;
  if (edge.distributionPattern === "ALL_TO_ALL") {
    const n = edge.numberOfSubpartitions ?? q;
    return {
      producers: Array.from({ length: p }, (_, i) => i),
      subpartitions: {
        start: Math.floor((consumerSubtask * n) / q),
        end: Math.floor(((consumerSubtask + 1) * n) / q) - 1,
      },
    };
  }
  if (p >= q) {
    const start = Math.floor((consumerSubtask * p) / q);
    const end = Math.floor(((consumerSubtask + 1) * p) / q);
    return {
      producers: Array.from({ length: end - start }, (_, i) => start + i),
      subpartitions: { start: 0, end: 0 },
    };
  }
  const producer = Math.floor((consumerSubtask * p) / q);
  const index = consumerSubtask - firstConsumer(producer, p, q);
  return { producers: [producer], subpartitions: { start: index, end: index } };
}
