import type {
  DeploymentOrder,
  ExecutionVertex,
  JobDeployer,
  JobExecution,
  JobVertex,
} from "@sluice/runtime";
import { JobGraph } from "@sluice/runtime";
import type { TaskExecutorGateway } from "@sluice/runtime/plugin";
import { type JsonObject, ResultPartitionType } from "@sluice/runtime-api";
import {
  type ConsumeOptions,
  type ProducePlan,
  TCK_MAX_PARALLELISM,
  TCK_NAMES,
} from "./tck-tasks.js";

/** One producer subtask writing `plan` to one consumer subtask that reads as `consume` says. */
export function oneToOne(plan: ExchangeSpec["plan"], consume?: ConsumeOptions): ExchangeSpec {
  return { producers: 1, consumers: 1, plan, ...(consume === undefined ? {} : { consume }) };
}

/** What one exchange looks like: its shape, what producers write and how consumers read. */
export interface ExchangeSpec {
  readonly producers: number;
  /** Subtasks of each consumer vertex. */
  readonly consumers: number;
  /** The producers' plan; `deployDelayMs` makes a worker of the kit deploy a producer late. */
  readonly plan: ProducePlan & { readonly deployDelayMs?: number };
  readonly consume?: ConsumeOptions;
  readonly order?: DeploymentOrder;
  /** The type of the producers' data set (default PIPELINED_BOUNDED). */
  readonly partitionType?: ResultPartitionType;
  /**
   * Consumer vertices that read the producers' one data set, each all of it (default 1; more
   * need a re-consumable type such as BLOCKING). They are named `Consumer`, `Consumer 2`, ….
   */
  readonly readers?: number;
  /**
   * Also connects Producer to Consumer by a pipelined edge that carries nothing, which makes them
   * one pipelined region: they are deployed together, so a consumer asks for a blocking data set
   * while its producers still write it.
   */
  readonly consumersInProducerRegion?: boolean;
}

/** An exchange deployed by the kit: the job, and the subtasks of its vertices. */
export interface Exchange {
  readonly execution: JobExecution;
  readonly producers: readonly ExecutionVertex[];
  /** The subtasks of the first consumer vertex (`Consumer`). */
  readonly consumers: readonly ExecutionVertex[];
  /** The subtasks of every consumer vertex, in reader order. */
  readonly readers: readonly (readonly ExecutionVertex[])[];
}

/** The name of consumer vertex `reader` (0-based) of a kit exchange. */
export function readerName(reader: number): string {
  return reader === 0 ? "Consumer" : `Consumer ${reader + 1}`;
}

/**
 * Deploys an exchange as a job through the JobDeployer: Producer writes one data set, HASH by
 * key, that every consumer vertex reads. Producers run on `producerSide`; consumer vertex `i` on
 * `consumerSide[i]` (or all on `consumerSide`).
 */
export async function deployExchange(
  deployer: JobDeployer,
  name: string,
  spec: ExchangeSpec,
  producerSide: TaskExecutorGateway,
  consumerSide: TaskExecutorGateway | readonly TaskExecutorGateway[],
): Promise<Exchange> {
  const graph = new JobGraph(`${name} exchange`);
  const producer = graph.addVertex({
    name: "Producer",
    parallelism: spec.producers,
    invokable: TCK_NAMES.produce,
    configuration: spec.plan as unknown as JsonObject,
  });
  const records = graph.createDataSet(producer, {
    partitioner: { name: "HASH", keySelector: TCK_NAMES.keySelector },
    serializer: TCK_NAMES.serializer,
    ...(spec.partitionType === undefined ? {} : { partitionType: spec.partitionType }),
  });
  const readers: JobVertex[] = [];
  for (let i = 0; i < (spec.readers ?? 1); i++) {
    const reader = graph.addVertex({
      name: readerName(i),
      parallelism: spec.consumers,
      maxParallelism: TCK_MAX_PARALLELISM,
      invokable: TCK_NAMES.consume,
      configuration: (spec.consume ?? {}) as JsonObject,
    });
    graph.connectDataSet(records, reader);
    readers.push(reader);
  }
  if (spec.consumersInProducerRegion === true) {
    graph.connect(producer, readers[0] as JobVertex, {
      partitioner: { name: "REBALANCE" },
      serializer: TCK_NAMES.serializer,
      partitionType: ResultPartitionType.PIPELINED_BOUNDED,
    });
  }
  const sides = Array.isArray(consumerSide)
    ? (consumerSide as readonly TaskExecutorGateway[])
    : readers.map(() => consumerSide as TaskExecutorGateway);
  const execution = await deployer.deploy(
    graph,
    (vertex) =>
      vertex === producer ? producerSide : (sides[readers.indexOf(vertex)] as TaskExecutorGateway),
    spec.order === undefined ? {} : { order: spec.order },
  );
  const subtasks = (vertex: JobVertex) =>
    execution.executionVertices.filter((e) => e.vertex === vertex);
  const readerSubtasks = readers.map(subtasks);
  return {
    execution,
    producers: subtasks(producer),
    consumers: readerSubtasks[0] ?? [],
    readers: readerSubtasks,
  };
}
