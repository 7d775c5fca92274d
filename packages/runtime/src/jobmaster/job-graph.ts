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
  type TaskInputsOutputsDescriptor,
  UPPER_BOUND_MAX_PARALLELISM,
} from "@sluice/runtime-api";
import { parseFactoryReference } from "../loader/factory-reference.js";
import type { PartitionerSpec } from "../messages/task-deployment-descriptor.js";
import { computeDefaultMaxParallelism } from "../partitioner/key-group-range-assignment.js";
import { cyclesOf } from "./strongly-connected-components.js";

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

/**
 * The output of a vertex (Flink's `IntermediateDataSet`): one result partition per producer
 * subtask, written once however many consumers read it. Its type, partitioner and serializer are
 * fixed when it is created; each consuming {@link JobEdge} gets its own input gates on the same
 * partitions. Only a re-consumable type (BLOCKING, BLOCKING_PERSISTENT) may have several
 * consumers, and they must all see the partitions alike: the same parallelism and distribution
 * pattern (a partition has one subpartition per consumer subtask), and for HASH the same max
 * parallelism (the key groups records are routed by).
 */
export interface IntermediateDataSet {
  /** The data set's id (part of every partition id). */
  readonly id: IntermediateDataSetID;
  /** The vertex whose subtasks write it. */
  readonly producer: JobVertex;
  /** Pipelined (streamed while produced) or blocking (read after the producer finished). */
  readonly partitionType: ResultPartitionType;
  /** How records are routed to subpartitions. */
  readonly partitioner: PartitionerSpec;
  /** The records' serializer, by name. */
  readonly serializer: string;
  /** The edges that read it, in the order they were connected. */
  readonly consumers: readonly JobEdge[];
}

/** A consumer vertex reading a data set: one input gate per subtask (Flink's `JobEdge`). */
export interface JobEdge {
  /** The data set read. */
  readonly dataSet: IntermediateDataSet;
  /** The producing vertex (the data set's producer). */
  readonly source: JobVertex;
  /** The consuming vertex. */
  readonly target: JobVertex;
  /** The data set's id. */
  readonly resultId: IntermediateDataSetID;
  /** The data set's partition type. */
  readonly partitionType: ResultPartitionType;
  /** How producer subtasks map to consumer subtasks. */
  readonly distributionPattern: DistributionPattern;
  /** The data set's partitioner. */
  readonly partitioner: PartitionerSpec;
  /** The data set's serializer. */
  readonly serializer: string;
  /** ALL_TO_ALL: the subpartitions of each producer's partition, when set (see `DataSetConsumerSpec`). */
  readonly numberOfSubpartitions?: number;
}

/** What {@link JobGraph.addVertex} takes. */
export interface JobVertexSpec {
  /**
   * The vertex's id; default a new random one. A graph rebuilt from its JSON form
   * (`JobGraphCodec`) keeps its ids.
   */
  readonly id?: JobVertexID;
  readonly name: string;
  readonly parallelism: number;
  /** Default: Flink's `computeDefaultMaxParallelism(parallelism)` (at least 128). */
  readonly maxParallelism?: number;
  readonly invokable?: string;
  readonly configuration?: JsonObject;
}

/** What {@link JobGraph.createDataSet} takes. */
export interface IntermediateDataSetSpec {
  /** The data set's id; default a new random one (kept by `JobGraphCodec`). */
  readonly id?: IntermediateDataSetID;
  readonly partitioner: PartitionerSpec;
  readonly serializer: string;
  /** Default PIPELINED_BOUNDED. */
  readonly partitionType?: ResultPartitionType;
}

/** What {@link JobGraph.connectDataSet} takes. */
export interface DataSetConsumerSpec {
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

/** What {@link JobGraph.connect} takes: a new data set and how the target reads it. */
export interface JobEdgeSpec extends IntermediateDataSetSpec, DataSetConsumerSpec {}

/** Which producer subtasks a consumer subtask reads, and which of their subpartitions. */
export interface ConsumedPartitions {
  /** Producer subtask indexes, in channel order. */
  readonly producers: readonly number[];
  /** The subpartitions read from each of them. */
  readonly subpartitions: IndexRange;
}

/** A data set as the graph keeps it: its consumer list grows as edges are connected. */
interface MutableDataSet extends IntermediateDataSet {
  readonly consumers: JobEdge[];
}

/**
 * A job: vertices that produce data sets, and edges by which vertices read them (Flink's
 * `JobGraph`). The job side's `JobDeployer` turns it into task deployment descriptors.
 */
export class JobGraph {
  /** The job's id. */
  readonly jobId: JobID;
  /** The job's name. */
  readonly name: string;
  private readonly vertexList: JobVertex[] = [];
  private readonly dataSetList: MutableDataSet[] = [];
  private readonly edgeList: JobEdge[] = [];
  private jobModule: string | undefined;

  /**
   * @param jobId - the job's id, or its 32 hex digits; default a new random one. A fixed id lets
   *   an application that submits its job again (under high availability, on every job manager
   *   that becomes leader) find the job a previous leader ran or finished instead of starting it
   *   once more.
   * @throws IllegalArgumentError for a string that is not 32 hex digits.
   */
  constructor(name: string, jobId: JobID | string = new JobID()) {
    this.name = name;
    this.jobId = typeof jobId === "string" ? JobID.fromHex(jobId) : jobId;
  }

  /**
   * The job module (`<module>#<export>`, see `JobModule`) whose user code every TaskExecutor
   * loads, from its own host, to run this job's tasks; `undefined`: the code each TaskExecutor
   * was started with.
   */
  get userCodeModule(): string | undefined {
    return this.jobModule;
  }

  /**
   * Names the job module whose user code the job's tasks run (Flink's user jars of a job graph).
   *
   * @throws ConfigurationError when `reference` is not a `<module>#<export>` reference.
   */
  setUserCodeModule(reference: string): void {
    parseFactoryReference(reference, `the user code module of job ${this.name}`, {});
    this.jobModule = reference.trim();
  }

  /** The vertices, in the order they were added. */
  get vertices(): readonly JobVertex[] {
    return this.vertexList;
  }

  /** The data sets, in the order they were created. */
  get dataSets(): readonly IntermediateDataSet[] {
    return this.dataSetList;
  }

  /** The edges, in the order they were connected. */
  get edges(): readonly JobEdge[] {
    return this.edgeList;
  }

  /**
   * Adds a vertex.
   *
   * @throws IllegalArgumentError for an empty or duplicate name or id, or an invalid parallelism.
   */
  addVertex(spec: JobVertexSpec): JobVertex {
    if (typeof spec.name !== "string" || spec.name === "") {
      throw new IllegalArgumentError("a job vertex needs a non-empty name");
    }
    if (this.vertexList.some((vertex) => vertex.name === spec.name)) {
      throw new IllegalArgumentError(`job ${this.name} already has a vertex named "${spec.name}"`);
    }
    if (spec.id !== undefined && this.vertexList.some((vertex) => vertex.id.equals(spec.id))) {
      throw new IllegalArgumentError(`job ${this.name} already has a vertex with id ${spec.id}`);
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
      id: spec.id ?? new JobVertexID(),
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
   * Creates a data set that `producer`'s subtasks write, read by the vertices
   * {@link connectDataSet} connects to it. A deployed job needs at least one consumer per data set.
   *
   * @throws IllegalArgumentError for a vertex of another graph or a duplicate id.
   */
  createDataSet(producer: JobVertex, spec: IntermediateDataSetSpec): IntermediateDataSet {
    this.checkOwnVertex(producer);
    const dataSet = this.newDataSet(producer, spec);
    this.dataSetList.push(dataSet);
    return dataSet;
  }

  /**
   * Makes `target` read `dataSet`: each of its subtasks gets one input gate (in the order its
   * inputs were connected) on the data set's partitions. A re-consumable data set may be read by
   * several vertices, and twice by one; its producer writes it once.
   *
   * @throws IllegalArgumentError for a data set or vertex of another graph, a cycle, a FORWARD
   *   edge between vertices of different parallelism, a second consumer of a pipelined data set,
   *   or a consumer that does not match the data set's first consumer (parallelism, distribution
   *   pattern, and for HASH max parallelism).
   */
  connectDataSet(
    dataSet: IntermediateDataSet,
    target: JobVertex,
    spec: DataSetConsumerSpec = {},
  ): JobEdge {
    const own = this.dataSetList.find((candidate) => candidate === dataSet);
    if (own === undefined) {
      throw new IllegalArgumentError(
        `data set ${dataSet.id} of "${dataSet.producer.name}" is not part of job ${this.name}`,
      );
    }
    return this.addEdge(own, target, spec);
  }

  /**
   * Connects `source` to `target` with a new data set: {@link createDataSet} and
   * {@link connectDataSet} in one. Read the same data set from another vertex with
   * `connectDataSet(edge.dataSet, other)`.
   *
   * @throws IllegalArgumentError as those two; the graph is unchanged then.
   */
  connect(source: JobVertex, target: JobVertex, spec: JobEdgeSpec): JobEdge {
    this.checkOwnVertex(source);
    const dataSet = this.newDataSet(source, spec);
    const edge = this.addEdge(dataSet, target, spec);
    this.dataSetList.push(dataSet);
    return edge;
  }

  /** The edges `vertex` reads, in the order they were connected (its input gates). */
  inputsOf(vertex: JobVertex): JobEdge[] {
    return this.edgeList.filter((edge) => edge.target === vertex);
  }

  /** The edges that read data sets of `vertex`, in the order they were connected. */
  outputsOf(vertex: JobVertex): JobEdge[] {
    return this.edgeList.filter((edge) => edge.source === vertex);
  }

  /** The data sets `vertex` writes, in the order they were created (its produced partitions). */
  producedDataSetsOf(vertex: JobVertex): IntermediateDataSet[] {
    return this.dataSetList.filter((dataSet) => dataSet.producer === vertex);
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

  /**
   * The job's pipelined regions (Flink's `LogicalPipelinedRegion`), each in topological order, the
   * regions in topological order too. Vertices connected by an edge that must be consumed while it
   * is produced (PIPELINED, PIPELINED_BOUNDED) are in one region, deployed together; edges of the
   * other types separate regions. Regions that would wait for each other through such edges (a
   * cycle between regions) are merged into one, as Flink does, so that no region waits forever.
   */
  pipelinedRegions(): JobVertex[][] {
    const order = this.topologicalOrder();
    const parent = new Map<JobVertex, JobVertex>(order.map((vertex) => [vertex, vertex]));
    const find = (vertex: JobVertex): JobVertex => {
      let root = vertex;
      while (parent.get(root) !== root) root = parent.get(root) as JobVertex;
      return root;
    };
    const union = (a: JobVertex, b: JobVertex) => parent.set(find(a), find(b));
    for (const edge of this.edgeList) {
      if (edge.partitionType.isPipelined) union(edge.source, edge.target);
    }
    const successors = new Map<JobVertex, Set<JobVertex>>();
    for (const edge of this.edgeList) {
      const from = find(edge.source);
      const to = find(edge.target);
      if (from !== to) successors.set(from, (successors.get(from) ?? new Set()).add(to));
    }
    const roots = new Set(order.map(find));
    for (const cycle of cyclesOf(roots, (root) => successors.get(root) ?? [])) {
      for (const root of cycle) union(root, cycle[0] as JobVertex);
    }
    const regions = new Map<JobVertex, JobVertex[]>();
    for (const vertex of order) {
      const root = find(vertex);
      regions.set(root, [...(regions.get(root) ?? []), vertex]);
    }
    return [...regions.values()];
  }

  /**
   * What a vertex's tasks read and write, as a ShuffleMaster sizes their network memory (Flink's
   * `TaskInputsOutputsDescriptor`): per consumed data set the most channels any subtask's gate
   * has, and how many of the vertex's gates read it (`partitionReuseCount`); per produced data set
   * the most subpartitions any of its partitions has.
   */
  inputsOutputsOf(vertex: JobVertex): TaskInputsOutputsDescriptor {
    const inputChannelNums: Record<string, number> = {};
    const partitionReuseCount: Record<string, number> = {};
    const inputPartitionTypes: Record<string, ResultPartitionType> = {};
    const inputs = this.inputsOf(vertex);
    for (const edge of inputs) {
      const key = edge.resultId.toString();
      let channels = 0;
      for (let i = 0; i < vertex.parallelism; i++) {
        const { producers, subpartitions } = consumedPartitionsOf(edge, i);
        channels = Math.max(
          channels,
          producers.length * (subpartitions.end - subpartitions.start + 1),
        );
      }
      inputChannelNums[key] = channels;
      partitionReuseCount[key] = (partitionReuseCount[key] ?? 0) + 1;
      inputPartitionTypes[key] = edge.partitionType;
    }
    const subpartitionNums: Record<string, number> = {};
    const partitionTypes: Record<string, ResultPartitionType> = {};
    for (const dataSet of this.producedDataSetsOf(vertex)) {
      const key = dataSet.id.toString();
      const [first] = dataSet.consumers;
      let subpartitions = 0;
      for (let i = 0; first !== undefined && i < vertex.parallelism; i++) {
        subpartitions = Math.max(subpartitions, numberOfSubpartitions(first, i));
      }
      subpartitionNums[key] = subpartitions;
      partitionTypes[key] = dataSet.partitionType;
    }
    return {
      inputGateNums: inputs.length,
      inputChannelNums,
      partitionReuseCount,
      subpartitionNums,
      inputPartitionTypes,
      partitionTypes,
    };
  }

  private checkOwnVertex(vertex: JobVertex): void {
    if (!this.vertexList.includes(vertex)) {
      throw new IllegalArgumentError(`vertex "${vertex.name}" is not part of job ${this.name}`);
    }
  }

  private newDataSet(producer: JobVertex, spec: IntermediateDataSetSpec): MutableDataSet {
    if (spec.id !== undefined && this.dataSetList.some((dataSet) => dataSet.id.equals(spec.id))) {
      throw new IllegalArgumentError(`job ${this.name} already has a data set with id ${spec.id}`);
    }
    return Object.freeze({
      id: spec.id ?? new IntermediateDataSetID(),
      producer,
      partitionType: spec.partitionType ?? ResultPartitionType.PIPELINED_BOUNDED,
      partitioner: spec.partitioner,
      serializer: spec.serializer,
      consumers: [],
    });
  }

  private addEdge(dataSet: MutableDataSet, target: JobVertex, spec: DataSetConsumerSpec): JobEdge {
    this.checkOwnVertex(target);
    const source = dataSet.producer;
    const what = `data set ${dataSet.id} of "${source.name}"`;
    if (source === target || this.reaches(target, source)) {
      throw new IllegalArgumentError(
        `connecting "${source.name}" to "${target.name}" would make job ${this.name} cyclic`,
      );
    }
    const { partitioner, partitionType } = dataSet;
    const pointwiseByDefault = partitioner.name === "FORWARD" || partitioner.name === "RESCALE";
    const distributionPattern =
      spec.distributionPattern ?? (pointwiseByDefault ? "POINTWISE" : "ALL_TO_ALL");
    if (partitioner.name === "FORWARD" && source.parallelism !== target.parallelism) {
      throw new IllegalArgumentError(
        `FORWARD from "${source.name}" (parallelism ${source.parallelism}) to "${target.name}" (parallelism ${target.parallelism}) needs equal parallelism`,
      );
    }
    const subpartitions = spec.numberOfSubpartitions;
    if (subpartitions !== undefined) {
      checkSubpartitions(subpartitions, partitioner, distributionPattern, target);
    }
    const [first] = dataSet.consumers;
    if (first !== undefined) {
      if (!partitionType.isReconsumable) {
        throw new IllegalArgumentError(
          `${what} is ${partitionType.name}, read once by "${first.target.name}": a pipelined partition ` +
            `can be consumed only once, so "${target.name}" cannot read it too; make it BLOCKING to read it several times`,
        );
      }
      const mismatch =
        target.parallelism !== first.target.parallelism
          ? `parallelism ${target.parallelism} differs from ${first.target.parallelism}`
          : distributionPattern !== first.distributionPattern
            ? `distribution pattern ${distributionPattern} differs from ${first.distributionPattern}`
            : partitioner.name === "HASH" && target.maxParallelism !== first.target.maxParallelism
              ? `maxParallelism ${target.maxParallelism} differs from ${first.target.maxParallelism} (the key groups of HASH)`
              : subpartitions !== first.numberOfSubpartitions
                ? `numberOfSubpartitions ${subpartitions ?? "(one per consumer)"} differs from ${first.numberOfSubpartitions ?? "(one per consumer)"}`
                : undefined;
      if (mismatch !== undefined) {
        throw new IllegalArgumentError(
          `"${target.name}" cannot read ${what} as "${first.target.name}" does: its ${mismatch}; ` +
            "every consumer of a data set must read its partitions alike",
        );
      }
    }
    const edge: JobEdge = Object.freeze({
      dataSet,
      source,
      target,
      resultId: dataSet.id,
      partitionType,
      distributionPattern,
      partitioner,
      serializer: dataSet.serializer,
      ...(subpartitions === undefined ? {} : { numberOfSubpartitions: subpartitions }),
    });
    dataSet.consumers.push(edge);
    this.edgeList.push(edge);
    return edge;
  }

  private reaches(from: JobVertex, to: JobVertex): boolean {
    return this.outputsOf(from).some((edge) => edge.target === to || this.reaches(edge.target, to));
  }
}

/** Checks `DataSetConsumerSpec.numberOfSubpartitions` against the edge it is set on. */
function checkSubpartitions(
  subpartitions: number,
  partitioner: PartitionerSpec,
  pattern: DistributionPattern,
  target: JobVertex,
): void {
  const what = `numberOfSubpartitions ${subpartitions} of the edge to "${target.name}"`;
  if (pattern !== "ALL_TO_ALL") {
    throw new IllegalArgumentError(`${what}: only ALL_TO_ALL edges take a number of subpartitions`);
  }
  const keyed = partitioner.name === "HASH";
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

/** The id of partition `producerSubtask` of a data set (or of the data set an edge reads). */
export function partitionIdOf(
  dataSet: IntermediateDataSet | JobEdge,
  producerSubtask: number,
): IntermediateResultPartitionID {
  const id = "dataSet" in dataSet ? dataSet.resultId : dataSet.id;
  return new IntermediateResultPartitionID(id, producerSubtask);
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
