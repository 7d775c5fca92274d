import type { ExecutionVertex } from "../execution-vertex.js";
import type { TrackedPartition } from "../job-master-partition-tracker.js";
import type { SchedulingExecutionVertex } from "./scheduling-pipelined-region.js";
import type { SchedulingTopology } from "./scheduling-topology.js";

/**
 * The producers of `lost` partitions (lost with their worker, or reported lost by the
 * ShuffleMaster) that must re-run now: those whose current attempt wrote the partition and which
 * a task not deployed yet will read. A reader already deployed finds out by itself, as in Flink:
 * its read fails with a partition exception that names the partition, that failure is the root
 * cause the job reports (or restarts from, re-running the producer with it), and a reader that
 * already read the partition to its end does not need it again. A partition every reader is done
 * with is not produced again.
 */
export function producersStillNeeded(
  topology: SchedulingTopology,
  lost: readonly TrackedPartition[],
  executionOf: (vertex: SchedulingExecutionVertex) => ExecutionVertex,
): ExecutionVertex[] {
  const producers = new Set<ExecutionVertex>();
  for (const { descriptor } of lost) {
    const partition = topology.resultPartition(descriptor.resultPartitionId.partitionId);
    if (partition === undefined) continue;
    const producer = executionOf(partition.producer);
    if (!producer.attemptId.equals(descriptor.resultPartitionId.producerId)) continue;
    if (partition.consumers.some((consumer) => executionOf(consumer).state === "CREATED")) {
      producers.add(producer);
    }
  }
  return [...producers];
}
