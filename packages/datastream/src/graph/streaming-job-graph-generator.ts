import { IllegalArgumentError, type TypeSerializer } from "@sluice/core";
import { JobGraph, type JobVertex, type PartitionerSpec } from "@sluice/runtime";
import {
  type KeySpec,
  OneInputTransformation,
  PartitionTransformation,
  SideOutputTransformation,
  SourceTransformation,
  type StreamPartitioning,
  serializerOf,
  type Transformation,
} from "../transformation.js";
import {
  CHAIN_CONFIG_KEY,
  CHAIN_CONFIG_VERSION,
  type ChainConfig,
  type ChainedOperatorConfig,
} from "./chain-config.js";

/** The environment's settings the generator reads. */
export interface StreamGraphSettings {
  readonly jobName: string;
  readonly parallelism: number;
  readonly maxParallelism: number | undefined;
  readonly chaining: boolean;
  /** The invokable every vertex of the job runs. */
  readonly invokable: string;
  /** The name a HASH edge's key selector is registered under. */
  keySelectorName(key: KeySpec): string;
}

/** An edge between two real nodes, with what the virtual nodes between them said. */
interface StreamEdge {
  readonly source: Transformation<unknown>;
  readonly target: OneInputTransformation<unknown, unknown>;
  readonly partitioning: StreamPartitioning;
  readonly key: KeySpec | undefined;
  /** The side output the edge reads, if it reads one. */
  readonly sideTag: string | undefined;
  readonly serializer: TypeSerializer<unknown>;
}

/** What one chain became. */
export interface GeneratedChain {
  /** The JobGraph vertex that runs the chain. */
  readonly vertex: JobVertex;
  /** The uids of its operators, head first. */
  readonly uids: readonly string[];
}

/** A compiled job: its graph and the chain of each vertex. */
export interface GeneratedJobGraph {
  /** The job's JobGraph. */
  readonly graph: JobGraph;
  /** Each vertex's chain, in the order the vertices were added. */
  readonly chains: readonly GeneratedChain[];
}

/** The display name of a node in a vertex name: `Source: X`, `Sink: X`, or its name. */
function displayName(node: Transformation<unknown>): string {
  if (node instanceof SourceTransformation) return `Source: ${node.name}`;
  if (node instanceof OneInputTransformation && node.isSink) return `Sink: ${node.name}`;
  return node.name;
}

/**
 * Compiles a stream graph into a JobGraph (Flink's `StreamingJobGraphGenerator`): operators
 * connected FORWARD with equal parallelism, whose chaining is allowed, become one vertex whose
 * task runs them as a chain; every other edge becomes a JobGraph edge with its partitioner and
 * its records' serializer. Vertices are named as Flink names chains (`Source: Lines -> Split ->
 * (Map, Filter)`), made unique with ` (2)`, ` (3)`, ...
 *
 * @throws IllegalArgumentError for a FORWARD edge between operators of different parallelism,
 *   two operators with one uid, or an invalid parallelism.
 */
export function generateJobGraph(
  transformations: readonly Transformation<unknown>[],
  settings: StreamGraphSettings,
): GeneratedJobGraph {
  const nodes = transformations.filter((node) => !node.isVirtual);
  checkUids(nodes);
  const parallelismOf = (node: Transformation<unknown>) => node.parallelism ?? settings.parallelism;
  const inEdges = new Map<Transformation<unknown>, StreamEdge[]>();
  const outEdges = new Map<Transformation<unknown>, StreamEdge[]>(nodes.map((node) => [node, []]));
  for (const node of nodes) {
    if (!(node instanceof OneInputTransformation)) continue;
    const edge = edgeInto(node, parallelismOf);
    inEdges.set(node, [edge]);
    outEdges.get(edge.source)?.push(edge);
  }
  const isChainable = (edge: StreamEdge) =>
    settings.chaining &&
    edge.partitioning === "FORWARD" &&
    (inEdges.get(edge.target)?.length ?? 0) === 1 &&
    parallelismOf(edge.source) === parallelismOf(edge.target) &&
    edge.source.chainingStrategy !== "NEVER" &&
    edge.target.chainingStrategy === "ALWAYS";
  const graph = new JobGraph(settings.jobName);
  const chains: GeneratedChain[] = [];
  const vertexOf = new Map<Transformation<unknown>, JobVertex>();
  const configOf = new Map<Transformation<unknown>, ChainedOperatorConfig>();
  const names = new Map<string, number>();
  const chainedName = (node: Transformation<unknown>): string => {
    const chained = (outEdges.get(node) ?? []).filter(isChainable);
    const name = displayName(node);
    if (chained.length === 0) return name;
    if (chained.length === 1) return `${name} -> ${chainedName((chained[0] as StreamEdge).target)}`;
    return `${name} -> (${chained.map((edge) => chainedName(edge.target)).join(", ")})`;
  };
  for (const head of nodes) {
    if ((inEdges.get(head) ?? []).some(isChainable)) continue;
    const members: Transformation<unknown>[] = [];
    const collect = (node: Transformation<unknown>) => {
      members.push(node);
      for (const edge of outEdges.get(node) ?? []) if (isChainable(edge)) collect(edge.target);
    };
    collect(head);
    const operators = members.map((node): ChainedOperatorConfig => {
      const config: ChainedOperatorConfig = { uid: node.uid, outputs: [], sideOutputs: [] };
      configOf.set(node, config);
      return config;
    });
    for (const node of members) {
      for (const edge of outEdges.get(node) ?? []) {
        if (isChainable(edge))
          outputsOf(configOf.get(node), edge).push({ chained: edge.target.uid });
      }
    }
    const chainConfig: ChainConfig = {
      version: CHAIN_CONFIG_VERSION,
      job: settings.jobName,
      operators,
    };
    const base = chainedName(head);
    const seen = (names.get(base) ?? 0) + 1;
    names.set(base, seen);
    const maxParallelism = head.maxParallelism ?? settings.maxParallelism;
    const vertex = graph.addVertex({
      name: seen === 1 ? base : `${base} (${seen})`,
      parallelism: parallelismOf(head),
      ...(maxParallelism === undefined ? {} : { maxParallelism }),
      invokable: settings.invokable,
      configuration: { [CHAIN_CONFIG_KEY]: chainConfig },
    });
    for (const node of members) vertexOf.set(node, vertex);
    chains.push({ vertex, uids: members.map((node) => node.uid) });
  }
  // The JobGraph's data sets of a vertex are its task's writers, in the order they are connected.
  const writers = new Map<JobVertex, number>();
  for (const node of nodes) {
    for (const edge of outEdges.get(node) ?? []) {
      if (isChainable(edge)) continue;
      const source = vertexOf.get(edge.source) as JobVertex;
      const writer = writers.get(source) ?? 0;
      writers.set(source, writer + 1);
      const partitioner: PartitionerSpec =
        edge.key === undefined
          ? { name: edge.partitioning }
          : { name: edge.partitioning, keySelector: settings.keySelectorName(edge.key) };
      graph.connect(source, vertexOf.get(edge.target) as JobVertex, {
        partitioner,
        serializer: edge.serializer.name,
      });
      outputsOf(configOf.get(edge.source), edge).push({ network: writer });
    }
  }
  return { graph, chains };
}

/** Where the source operator of `edge` lists its outputs: its main output or the edge's side output. */
function outputsOf(config: ChainedOperatorConfig | undefined, edge: StreamEdge) {
  if (config === undefined) throw new Error(`no chain holds operator ${edge.source.uid}`);
  if (edge.sideTag === undefined) return config.outputs;
  let side = config.sideOutputs.find((entry) => entry.tag === edge.sideTag);
  if (side === undefined) {
    side = { tag: edge.sideTag, outputs: [] };
    config.sideOutputs.push(side);
  }
  return side.outputs;
}

/**
 * The edge into `target`: its real source and what the virtual nodes on the way say. The
 * partitioning closest to the target wins (as in Flink); without one, FORWARD between equal
 * parallelism and REBALANCE otherwise.
 */
function edgeInto(
  target: OneInputTransformation<unknown, unknown>,
  parallelismOf: (node: Transformation<unknown>) => number,
): StreamEdge {
  let partition: PartitionTransformation<unknown> | undefined;
  let side: SideOutputTransformation<unknown> | undefined;
  let node: Transformation<unknown> = target.input;
  for (;;) {
    if (node instanceof PartitionTransformation) {
      partition ??= node;
      node = node.input;
    } else if (node instanceof SideOutputTransformation) {
      side ??= node;
      node = node.input;
    } else break;
  }
  const source = node;
  const same = parallelismOf(source) === parallelismOf(target);
  const partitioning = partition?.partitioning ?? (same ? "FORWARD" : "REBALANCE");
  if (partitioning === "FORWARD" && !same) {
    throw new IllegalArgumentError(
      `forward partitioning does not allow a change of parallelism: "${source.name}" (parallelism ${parallelismOf(source)}) -> "${target.name}" (parallelism ${parallelismOf(target)}); use rebalance() or rescale(), or give both one parallelism`,
    );
  }
  return {
    source,
    target,
    partitioning,
    key: partition?.key,
    sideTag: side?.tag.id,
    serializer: serializerOf(side ?? partition ?? source),
  };
}

function checkUids(nodes: readonly Transformation<unknown>[]): void {
  const seen = new Map<string, Transformation<unknown>>();
  for (const node of nodes) {
    const other = seen.get(node.uid);
    if (other !== undefined) {
      throw new IllegalArgumentError(
        `operators "${other.name}" and "${node.name}" have the same uid "${node.uid}": a uid names one operator of a job`,
      );
    }
    seen.set(node.uid, node);
  }
}
