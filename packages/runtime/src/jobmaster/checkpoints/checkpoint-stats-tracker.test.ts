import { describe, expect, it } from "vitest";
import { CheckpointStatsTracker } from "./checkpoint-stats-tracker.js";

describe("CheckpointStatsTracker", () => {
  it("reads 0 counts and -1 for every 'last' figure of a job without checkpoints, as Flink does", () => {
    const tracker = new CheckpointStatsTracker({
      checkpointCoordinator: undefined,
      latestRestore: undefined,
    });
    const gauges = new Map<string, () => number>();
    tracker.register({ gauge: (name, read) => gauges.set(name, read) });
    expect([...gauges.keys()].sort()).toEqual([
      "lastCheckpointDuration",
      "lastCheckpointFullSize",
      "lastCheckpointPersistedData",
      "lastCheckpointProcessedData",
      "lastCheckpointRestoreTimestamp",
      "lastCheckpointSize",
      "lastCompletedCheckpointId",
      "numberOfCompletedCheckpoints",
      "numberOfFailedCheckpoints",
      "numberOfInProgressCheckpoints",
      "totalNumberOfCheckpoints",
    ]);
    for (const [name, read] of gauges) {
      expect(read(), name).toBe(name.startsWith("last") ? -1 : 0);
    }
    expect(tracker.snapshot().lastRestoredCheckpointId).toBe(-1);
    expect(tracker.snapshot().lastCheckpointAlignmentTime).toBe(-1);
  });
});
