import type { JobDetailsInfo, TaskManagerMetric } from "@sluice/cluster";
import { Configuration } from "@sluice/runtime";
import { describe, expect, it } from "vitest";
import {
  applyBatchDefaults,
  type BatchShuffleReport,
  type BatchSummary,
  batchDifferences,
  batchJson,
  compressionCodecOf,
  formatBatchSummary,
  readBatchShuffleReport,
  stagesOf,
} from "./batch-mode.js";

const MiB = 1024 * 1024;

function report(overrides: Partial<BatchShuffleReport> = {}): BatchShuffleReport {
  return {
    networkMemoryBytes: 8 * MiB,
    fileBytesWritten: 20 * MiB,
    bytesBeforeCompression: 40 * MiB,
    bytesAfterCompression: 16 * MiB,
    filesCreated: 2,
    filesDeleted: 2,
    filesOnDisk: 0,
    ...overrides,
  };
}

function summary(overrides: Partial<BatchSummary> = {}): BatchSummary {
  return {
    codec: "LZ4",
    taskManagers: [report(), report({ bytesBeforeCompression: 36 * MiB })],
    stages: [
      { vertex: "Source", deployedMs: 0, finishedMs: 5_000 },
      { vertex: "Count", deployedMs: 5_000, finishedMs: 7_000 },
    ],
    ...overrides,
  };
}

function metric(id: string, value: number): TaskManagerMetric {
  return { id, value: String(value) };
}

describe("batch mode", () => {
  it("sets its memory defaults only where the configuration sets nothing (old keys included)", () => {
    const configuration = new Configuration({
      "taskmanager.network.memory.min": "32mb",
      "taskmanager.network.batch-shuffle.compression.enabled": false,
    });
    applyBatchDefaults(configuration);
    expect(configuration.has("taskmanager.memory.network.min")).toBe(false);
    expect(configuration.getRaw("taskmanager.network.sort-shuffle.min-buffers")).toBe(128);
    expect(configuration.getRaw("taskmanager.memory.framework.off-heap.batch-shuffle.size")).toBe(
      "16mb",
    );
    expect(compressionCodecOf(configuration)).toBe("NONE");
    const defaults = new Configuration({});
    applyBatchDefaults(defaults);
    expect(defaults.getRaw("taskmanager.memory.network.min")).toBe("8mb");
    expect(compressionCodecOf(defaults)).toBe("LZ4");
  });

  it("reads a task manager's report from its metrics as the REST endpoint lists them, or nothing without them", () => {
    const netty = "Status.Shuffle.Netty";
    const batch = `${netty}.BatchShuffle`;
    const metrics = [
      metric(`${netty}.TotalMemory`, 8 * MiB),
      metric(`${batch}.FileBytesWritten`, 100),
      metric(`${batch}.BytesBeforeCompression`, 300),
      metric(`${batch}.BytesAfterCompression`, 90),
      metric(`${batch}.FilesCreated`, 2),
      metric(`${batch}.FilesDeleted`, 2),
      metric(`${batch}.FilesOnDisk`, 0),
    ];
    expect(readBatchShuffleReport(metrics)).toEqual({
      networkMemoryBytes: 8 * MiB,
      fileBytesWritten: 100,
      bytesBeforeCompression: 300,
      bytesAfterCompression: 90,
      filesCreated: 2,
      filesDeleted: 2,
      filesOnDisk: 0,
    });
    expect(readBatchShuffleReport(metrics.slice(0, 3))).toBeUndefined();
  });

  it("times the stages from the job's vertices, from its first deployment, in the order they were deployed", () => {
    const vertex = (name: string, start: number, end: number) =>
      ({ name, "start-time": start, "end-time": end }) as JobDetailsInfo["vertices"][number];
    const job = {
      "end-time": 9_500,
      now: 9_600,
      vertices: [vertex("Count", 6_000, -1), vertex("Source", 1_000, 6_000)],
    } as unknown as JobDetailsInfo;
    expect(stagesOf(job)).toEqual([
      { vertex: "Source", deployedMs: 0, finishedMs: 5_000 },
      // Not ended (a subtask that never finished): the job's end.
      { vertex: "Count", deployedMs: 5_000, finishedMs: 8_500 },
    ]);
  });

  it("finds nothing wrong with a run that deleted its files and ran its stages in order", () => {
    expect(batchDifferences(summary(), "Count")).toEqual([]);
  });

  it("reports files left behind and counters deployed before the sources finished", () => {
    const differences = batchDifferences(
      summary({
        taskManagers: [report(), report({ filesDeleted: 0, filesOnDisk: 2 })],
        stages: [
          { vertex: "Source", deployedMs: 0, finishedMs: 5_000 },
          { vertex: "Count", deployedMs: 10, finishedMs: 7_000 },
        ],
      }),
      "Count",
    );
    expect(differences).toEqual([
      "2 of 4 blocking partition files were not deleted when the job ended",
      'the counters were deployed at 0.01 s, before "Source" finished at 5.00 s',
    ]);
  });

  it("sums the task managers: data against each one's network memory, ratio, files", () => {
    const lines = formatBatchSummary(summary()).join("\n");
    // 76 MiB before and 32 MiB after compression; the smaller multiple is 36 MiB ÷ 8 MiB.
    expect(lines).toContain("79.7 MB of BLOCKING partition data, 4.5x the network memory");
    expect(lines).toContain("(8.0 MiB)");
    expect(lines).toContain("41.9 MB in 4 files (data + index), compression ratio 2.38 (LZ4)");
    expect(lines).toContain("4 files deleted at the job's end");
    expect(lines).toContain("Source 0.00 s – 5.00 s, then Count 5.00 s – 7.00 s");
    expect(batchJson(summary())).toMatchObject({
      partitionBytes: 76 * MiB,
      bytesOnDisk: 40 * MiB,
      compressionRatio: 2.38,
      networkMemoryMultiple: 4.5,
      filesCreated: 4,
      filesDeleted: 4,
    });
  });
});
