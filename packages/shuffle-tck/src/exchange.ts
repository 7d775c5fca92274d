import type {
  DeploymentOrder,
  ExecutionVertex,
  JobDeployer,
  JobExecution,
  TaskExecutorGateway,
} from "@sluice/runtime";
import { JobGraph } from "@sluice/runtime";
import type { JsonObject } from "@sluice/runtime-api";
import {
  type ConsumeOptions,
  type ProducePlan,
  TCK_MAX_PARALLELISM,
  TCK_NAMES,
} from "./tck-tasks.js";

/** What one exchange looks like: its shape, what producers write and how consumers read. */
export interface ExchangeSpec {
  readonly producers: number;
  readonly consumers: number;
  /** The producers' plan; `deployDelayMs` makes a worker of the kit deploy a producer late. */
  readonly plan: ProducePlan & { readonly deployDelayMs?: number };
  readonly consume?: ConsumeOptions;
  readonly order?: DeploymentOrder;
}

/** An exchange deployed by the kit: the job, and the subtasks of its two vertices. */
export interface Exchange {
  readonly execution: JobExecution;
  readonly producers: readonly ExecutionVertex[];
  readonly consumers: readonly ExecutionVertex[];
}

/**
 * Deploys an exchange as a job of two vertices, Producer → HASH by key → Consumer, through the
 * JobDeployer: producers on `producerSide`, consumers on `consumerSide`.
 */
export async function deployExchange(
  deployer: JobDeployer,
  name: string,
  spec: ExchangeSpec,
  producerSide: TaskExecutorGateway,
  consumerSide: TaskExecutorGateway,
): Promise<Exchange> {
  const graph = new JobGraph(`${name} exchange`);
  const producer = graph.addVertex({
    name: "Producer",
    parallelism: spec.producers,
    invokable: TCK_NAMES.produce,
    configuration: spec.plan as unknown as JsonObject,
  });
  const consumer = graph.addVertex({
    name: "Consumer",
    parallelism: spec.consumers,
    maxParallelism: TCK_MAX_PARALLELISM,
    invokable: TCK_NAMES.consume,
    configuration: (spec.consume ?? {}) as JsonObject,
  });
  graph.connect(producer, consumer, {
    partitioner: { name: "HASH", keySelector: TCK_NAMES.keySelector },
    serializer: TCK_NAMES.serializer,
  });
  const execution = await deployer.deploy(
    graph,
    (vertex) => (vertex === producer ? producerSide : consumerSide),
    spec.order === undefined ? {} : { order: spec.order },
  );
  const subtasks = (vertex: typeof producer) =>
    execution.executionVertices.filter((e) => e.vertex === vertex);
  return { execution, producers: subtasks(producer), consumers: subtasks(consumer) };
}
