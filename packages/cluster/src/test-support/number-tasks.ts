/** Invokables of the numbers jobs the cluster's tests run. */
import { JobGraph, PollStatus, type Task } from "@sluice/runtime";

/**
 * Counts and sums the numbers it reads; its checkpointed state is both, and a restored attempt
 * goes on from them.
 */
export async function sum(task: Task): Promise<{ count: number; sum: number }> {
  const state = { count: 0, sum: 0, ...(task.restoredState as object | undefined) };
  task.setCheckpointHandler({ snapshotState: () => state });
  const reader = task.reader<number>();
  for (;;) {
    const status = reader.pollRecords((value) => {
      state.count++;
      state.sum += value;
    }, 512);
    if (status === PollStatus.END_OF_INPUT) return state;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
  }
}

/** The numbers job `name`: two Numbers subtasks feed two Sum subtasks, hash-partitioned by value. */
export function numbersJob(name: string): JobGraph {
  const graph = new JobGraph(name);
  const numbers = graph.addVertex({ name: "Numbers", parallelism: 2, invokable: "numbers" });
  const total = graph.addVertex({ name: "Sum", parallelism: 2, invokable: "sum" });
  graph.connect(numbers, total, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}
