import { ConfigurationError } from "@sluice/core";
import {
  NetworkMemoryOptions,
  type ShuffleMaster,
  type TaskInputsOutputsDescriptor,
} from "@sluice/runtime-api";
import type { JobGraph } from "./job-graph.js";

/** A TaskExecutor as the check sees it: a name for messages and its network memory. */
export interface ShuffleMemoryHolder {
  /** How messages name it (`task manager 1 (pid 42) at 10.0.0.2`). */
  readonly label: string;
  /** Its network memory in bytes; `undefined` when it did not say (it is then not checked). */
  readonly networkMemory: number | undefined;
  /**
   * Its task slots (`taskmanager.numberOfTaskSlots`; default 1): the placement puts that many
   * subtasks of each vertex on it, all drawing from the same network memory.
   */
  readonly numberOfSlots?: number;
}

const MIB = 1024 ** 2;

/**
 * Checks, before a job is deployed on the round-robin placement (subtask `i` of every vertex on
 * the `i mod n`-th of the `n` task slots of `holders`, each holder's slots one after the other),
 * that the subtasks of each pipelined region fit the network
 * memory of the TaskExecutors they land on, by the shuffle plugin's own formula
 * (`ShuffleMaster.computeShuffleMemorySizeForTask`, the shuffle memory Flink gives a slot's
 * resource profile). The subtasks of a pipelined region are deployed and run together; regions
 * joined by BLOCKING edges run one after the other, so each is checked on its own. Only the
 * pipelined pools count: a blocking partition's pools are the sort-merge shuffle's fixed buffers,
 * sized by each task manager's own batch keys, which the job side does not know.
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) naming the job, the region's vertices, each
 *   TaskExecutor that lacks memory with what it needs and has, and the keys to change.
 */
export function checkShuffleMemoryFits(
  graph: JobGraph,
  master: ShuffleMaster,
  holders: readonly ShuffleMemoryHolder[],
): void {
  if (holders.length === 0) return;
  // The holder of each slot, as the job manager's placement lays them out.
  const slots = holders.flatMap((holder, index) =>
    Array.from({ length: holder.numberOfSlots ?? 1 }, () => index),
  );
  const n = slots.length;
  for (const region of graph.pipelinedRegions()) {
    const needs = new Array<number>(holders.length).fill(0);
    for (const vertex of region) {
      const perSubtask = master.computeShuffleMemorySizeForTask(
        pipelinedOnly(graph.inputsOutputsOf(vertex)),
      );
      for (let subtask = 0; subtask < vertex.parallelism; subtask++) {
        const holder = slots[subtask % n] as number;
        needs[holder] = (needs[holder] as number) + perSubtask;
      }
    }
    const short = holders.flatMap((holder, index) => {
      const need = needs[index] as number;
      return holder.networkMemory !== undefined && need > holder.networkMemory
        ? [`${holder.label} needs ${mib(need)} MiB and has ${mib(holder.networkMemory)} MiB`]
        : [];
    });
    if (short.length > 0) {
      throw new ConfigurationError(
        `job ${graph.name} (${graph.jobId}) does not fit the task managers' network memory: the subtasks of ${region.map((vertex) => `${vertex.name} (parallelism ${vertex.parallelism})`).join(", ")} run together, and ${short.join("; ")}; raise ${NetworkMemoryOptions.NETWORK_MEMORY_MIN.key} and ${NetworkMemoryOptions.NETWORK_MEMORY_MAX.key} (or ${NetworkMemoryOptions.NETWORK_MEMORY_FRACTION.key}), add task managers, or lower the parallelism`,
      );
    }
  }
}

function mib(bytes: number): string {
  return (bytes / MIB).toFixed(1);
}

/** The task's pipelined inputs and outputs only (see {@link checkShuffleMemoryFits}). */
function pipelinedOnly(descriptor: TaskInputsOutputsDescriptor): TaskInputsOutputsDescriptor {
  const keep = <T>(
    counts: Readonly<Record<string, T>>,
    types: Readonly<Record<string, { readonly isPipelined: boolean }>>,
  ) => Object.fromEntries(Object.entries(counts).filter(([id]) => types[id]?.isPipelined === true));
  const inputChannelNums = keep(descriptor.inputChannelNums, descriptor.inputPartitionTypes);
  return {
    ...descriptor,
    inputGateNums: Object.keys(inputChannelNums).length,
    inputChannelNums,
    partitionReuseCount: keep(descriptor.partitionReuseCount, descriptor.inputPartitionTypes),
    subpartitionNums: keep(descriptor.subpartitionNums, descriptor.partitionTypes),
  };
}
