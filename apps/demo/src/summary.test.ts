import { describe, expect, it } from "vitest";
import { formatSummary, type JobReport, summaryJson } from "./summary.js";

/** A run of 1,000 words on two task managers, without checkpoints. */
const PLAIN: JobReport = {
  shuffle: "@sluice/shuffle-tcp#TcpShuffleServiceFactory",
  shuffleModule: "/x/shuffle-tcp/dist/index.js",
  verified: true,
  differences: [],
  records: 1_000,
  bytes: 8_000,
  durationMs: 1_000,
  parallelism: 2,
  taskManagers: 2,
  distinctWords: 10,
  tasks: [],
  processes: [
    { role: "jobmanager", pid: 1, peakRssMb: 100 },
    {
      role: "taskmanager",
      index: 0,
      pid: 2,
      peakRssMb: 100,
      bufferPool: { available: 8, total: 8 },
    },
    {
      role: "taskmanager",
      index: 1,
      pid: 3,
      peakRssMb: 100,
      bufferPool: { available: 8, total: 8 },
    },
  ],
  restarts: 0,
  rerunTasks: [],
};

/** The same run with checkpoints, task manager 1 killed and replaced by task manager 2. */
const RECOVERED: JobReport = {
  ...PLAIN,
  taskManagers: 3,
  processes: [
    ...PLAIN.processes.slice(0, 2),
    { role: "taskmanager", index: 1, pid: 3, peakRssMb: 90, lost: true },
    {
      role: "taskmanager",
      index: 2,
      pid: 4,
      peakRssMb: 100,
      bufferPool: { available: 8, total: 8 },
    },
  ],
  checkpointing: {
    mode: "EXACTLY_ONCE",
    completed: 7,
    aborted: 1,
    restoredFrom: 4,
    lastAlignmentMs: 1.2345,
  },
  restarts: 1,
  rerunTasks: ["Source (1/2)", "Source (2/2)", "Count (1/2)", "Count (2/2)"],
  killedTaskManager: {
    index: 1,
    pid: 3,
    afterMs: 1_000.4,
    latestCheckpoint: 4,
    tasks: ["Source (2/2)", "Count (2/2)"],
  },
};

describe("the summary", () => {
  it("reports no checkpoint fields for a job without checkpoints", () => {
    const json = summaryJson(PLAIN);
    expect(json).not.toHaveProperty("checkpoints");
    expect(json).not.toHaveProperty("killedTaskManager");
    expect(json.restarts).toBe(0);
    expect(json.rerunTasks).toEqual([]);
    expect(formatSummary(PLAIN)).not.toContain("checkpoints");
  });

  it("reports the checkpoints, the restart, the killed task manager and the last alignment", () => {
    expect(summaryJson(RECOVERED)).toMatchObject({
      verified: true,
      checkpoints: { completed: 7, aborted: 1, restoredFrom: 4 },
      checkpointingMode: "EXACTLY_ONCE",
      lastCheckpointAlignmentMs: 1.235,
      restarts: 1,
      rerunTasks: ["Source (1/2)", "Source (2/2)", "Count (1/2)", "Count (2/2)"],
      killedTaskManager: {
        index: 1,
        pid: 3,
        afterMs: 1_000,
        latestCheckpoint: 4,
        tasks: ["Source (2/2)", "Count (2/2)"],
      },
      buffersReturned: true,
    });
    expect((summaryJson(RECOVERED).processes as { lost?: boolean }[])[2]).toMatchObject({
      lost: true,
    });
    const text = formatSummary(RECOVERED);
    expect(text).toContain(
      "  checkpoints    7 completed, 1 aborted (exactly-once); last alignment 1.2 ms",
    );
    expect(text).toContain(
      "  recovery       task manager 1 (pid 3) killed 1.00 s into the job; 1 restart from checkpoint 4",
    );
    expect(text).toContain("  re-ran         Source (1/2), Source (2/2), Count (1/2), Count (2/2)");
    expect(text).toContain("lost during the job");
    expect(text).toContain("verified: the counts of all 1,000 words equal the reference");
  });

  it("says how many words an at-least-once run counted twice", () => {
    const atLeastOnce: JobReport = {
      ...RECOVERED,
      records: 1_012,
      checkpointing: { mode: "AT_LEAST_ONCE", completed: 3, aborted: 0, duplicates: 12 },
    };
    expect(summaryJson(atLeastOnce)).toMatchObject({
      checkpoints: { completed: 3, aborted: 0, restoredFrom: null },
      checkpointingMode: "AT_LEAST_ONCE",
      lastCheckpointAlignmentMs: null,
      duplicates: 12,
    });
    expect(formatSummary(atLeastOnce)).toContain(
      "verified: no word lost (at-least-once); 12 words were counted twice",
    );
  });
});
