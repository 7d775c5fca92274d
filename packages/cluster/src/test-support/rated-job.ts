/**
 * A job whose sink reads at a rate its job messages set: `Numbers` (parallelism 2) emits
 * `configuration.count` numbers per subtask into `Sink` (parallelism 2), which reads at most
 * `rate` records a second per subtask while one is set, so that the numbers are back-pressured
 * and the sink busy. The message `rate` sets it (`{"recordsPerSecond": n}`) or lifts it
 * (`{"recordsPerSecond": null}`) and replies with the rate now; `where` replies with the process.
 */
import { IllegalArgumentError } from "@sluice/core";
import { JobGraph, PollStatus, type Task, type UserCode } from "@sluice/runtime";

/** The job graph: `count` numbers per source subtask, checkpointable when the job takes them. */
export function ratedJob(name: string, count: number): JobGraph {
  const graph = new JobGraph(name);
  const numbers = graph.addVertex({
    name: "Numbers",
    parallelism: 2,
    invokable: "numbers",
    configuration: { count },
  });
  const sink = graph.addVertex({ name: "Sink", parallelism: 2, invokable: "sink" });
  graph.connect(numbers, sink, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "int32",
  });
  return graph;
}

/** The user code of {@link ratedJob}, with the rate it starts at (`undefined`: none). */
export function ratedUserCode(initialRate?: number): UserCode<Task> {
  let rate = initialRate;
  return {
    invokables: {
      numbers: async (task) => {
        const count = Number(task.configuration.count);
        let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
        task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
        const writer = task.writer<number>();
        // A stop-with-savepoint stops it (task.stopMode) at its next mail point.
        while (offset < count && task.stopMode === undefined) {
          if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
          else if (offset % 256 === 0) await task.yieldToMailbox();
          if (task.stopMode !== undefined) break;
          writer.emit(offset);
          offset++;
        }
        return offset;
      },
      sink: async (task) => {
        const state = { count: 0, sum: 0, ...(task.restoredState as object | undefined) };
        task.setCheckpointHandler({ snapshotState: () => state });
        const reader = task.reader<number>();
        for (;;) {
          if (task.signal.aborted) throw task.signal.reason;
          const limit = rate;
          // A rate is met in slices of 50 ms: a twentieth of it, then a pause.
          const max = limit === undefined ? 512 : Math.max(1, Math.ceil(limit / 20));
          const status = reader.pollRecords((value) => {
            state.count++;
            state.sum += value;
          }, max);
          if (status === PollStatus.END_OF_INPUT) return state;
          if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
          else if (limit !== undefined) await new Promise((resolve) => setTimeout(resolve, 50));
          else await new Promise((resolve) => setImmediate(resolve));
        }
      },
    },
    messages: {
      rate: (payload) => {
        const value = (payload as { recordsPerSecond?: unknown } | null)?.recordsPerSecond;
        if (value !== null && !(typeof value === "number" && value >= 1)) {
          throw new IllegalArgumentError(
            `rate expects {"recordsPerSecond": <at least 1, or null>}, got ${JSON.stringify(payload)}`,
          );
        }
        rate = value ?? undefined;
        return { recordsPerSecond: rate ?? null };
      },
      where: (_payload, { jobId }) => ({ pid: process.pid, jobId: jobId.toString() }),
    },
  };
}
