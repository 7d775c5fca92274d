import { ConfigurationError, ErrorCodes } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import {
  ResultPartitionType,
  type ShuffleMaster,
  type TaskInputsOutputsDescriptor,
} from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { JobGraph } from "./job-graph.js";
import { checkShuffleMemoryFits } from "./shuffle-memory-check.js";

const MIB = 1024 ** 2;

/**
 * A master whose every pipelined input or output needs 1 MiB (the check's own logic is what is
 * tested here).
 */
const oneMiBPerTask = {
  computeShuffleMemorySizeForTask: (descriptor: TaskInputsOutputsDescriptor) =>
    MIB *
    (Object.keys(descriptor.inputChannelNums).length +
      Object.keys(descriptor.subpartitionNums).length),
} as unknown as ShuffleMaster;

function twoStages(partitionType: ResultPartitionType): JobGraph {
  const graph = new JobGraph("two stages");
  const a = graph.addVertex({ name: "A", parallelism: 2 });
  const b = graph.addVertex({ name: "B", parallelism: 2 });
  graph.connect(a, b, { partitioner: { name: "REBALANCE" }, serializer: "int32", partitionType });
  return graph;
}

describe("checkShuffleMemoryFits", () => {
  it("sums the subtasks of a pipelined region on the task manager each lands on", () => {
    const holder = { label: "task manager 0", networkMemory: 3 * MIB };
    const error = expectError(
      () =>
        checkShuffleMemoryFits(twoStages(ResultPartitionType.PIPELINED_BOUNDED), oneMiBPerTask, [
          holder,
        ]),
      ConfigurationError,
      ErrorCodes.CONFIG,
    );
    expect(error.message).toContain("task manager 0 needs 4.0 MiB and has 3.0 MiB");
    // Two task managers: each gets one subtask of each vertex.
    checkShuffleMemoryFits(twoStages(ResultPartitionType.PIPELINED_BOUNDED), oneMiBPerTask, [
      holder,
      { label: "task manager 1", networkMemory: 3 * MIB },
    ]);
  });

  it("sums the subtasks the slots of one task manager run: its slots share its network memory", () => {
    // A task manager of 2 slots and one of 1: subtasks 0 and 1 of each vertex land on the first.
    const error = expectError(
      () =>
        checkShuffleMemoryFits(twoStages(ResultPartitionType.PIPELINED_BOUNDED), oneMiBPerTask, [
          { label: "task manager 0", networkMemory: 3 * MIB, numberOfSlots: 2 },
          { label: "task manager 1", networkMemory: 3 * MIB },
        ]),
      ConfigurationError,
      ErrorCodes.CONFIG,
    );
    expect(error.message).toContain("task manager 0 needs 4.0 MiB and has 3.0 MiB");
    expect(error.message).not.toContain("task manager 1 needs");
  });

  it("counts no blocking pool: the sort-merge shuffle sizes them by each task manager's own keys", () => {
    // Pipelined, the one task manager needs 4 MiB; blocking, none of it counts.
    checkShuffleMemoryFits(twoStages(ResultPartitionType.BLOCKING), oneMiBPerTask, [
      { label: "task manager 0", networkMemory: 1 },
    ]);
  });

  it("does not check a task manager that did not say its memory", () => {
    checkShuffleMemoryFits(twoStages(ResultPartitionType.PIPELINED_BOUNDED), oneMiBPerTask, [
      { label: "an older task manager", networkMemory: undefined },
    ]);
  });
});
