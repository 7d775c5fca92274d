import type { ExecutionVertex } from "./execution-vertex.js";
import type { JobGraph, JobVertex } from "./job-graph.js";

/**
 * Splits subtasks that are deployed at once (in deployment order) into waves whose subtasks are
 * submitted together, without waiting for one another's answer, as Flink's scheduler deploys a
 * region's subtasks. A subtask joins the wave after the latest wave holding a subtask of a vertex
 * connected to its own (either way) that comes before it in the order, so each wave waits only
 * for what the order promises it: with producers first, every producer's `submitTask` answered
 * (its partitions exist on its TaskExecutor) before a consumer is submitted, so the consumer's
 * partition requests find them and are never retried after PartitionNotFound; with consumers
 * first, every consumer was deployed (with unknown descriptors) before its producers, whose
 * deployment then updates it. The number of waves is the length of the longest chain of
 * connected vertices in the batch, not the number of subtasks.
 *
 * @param graph - the job graph the subtasks belong to.
 * @param ready - the subtasks to deploy, in deployment order (subtasks of one vertex in a row).
 * @returns the waves, in the order they are deployed; within a wave, the order of `ready`.
 */
export function deploymentWaves<T extends { readonly execution: Pick<ExecutionVertex, "vertex"> }>(
  graph: JobGraph,
  ready: readonly T[],
): T[][] {
  const waveOf = new Map<JobVertex, number>();
  const waves: T[][] = [];
  for (const item of ready) {
    const { vertex } = item.execution;
    let wave = waveOf.get(vertex);
    if (wave === undefined) {
      wave = 0;
      const neighbours = [
        ...graph.inputsOf(vertex).map((edge) => edge.source),
        ...graph.outputsOf(vertex).map((edge) => edge.target),
      ];
      for (const neighbour of neighbours) {
        const before = waveOf.get(neighbour);
        if (before !== undefined) wave = Math.max(wave, before + 1);
      }
      waveOf.set(vertex, wave);
    }
    while (waves.length <= wave) waves.push([]);
    (waves[wave] as T[]).push(item);
  }
  return waves;
}
