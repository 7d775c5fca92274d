/**
 * Case 8: the batch shuffle — a BLOCKING partition written then read between two processes,
 * against plain fs streams (also through one shuffle worker of `@sluice/shuffle-remote`, measured
 * as well against fs streams through a hand-written store process: the same hops and processes
 * with none of a shuffle's work); and LZ4 over the demo's words, Sluice's BufferCompressor beside
 * lz4-napi.
 */
import type { BatchParams } from "../batch-roles.js";
import { median, type ResultRow, selected } from "../harness.js";
import type { Impl } from "../worker.js";
import { type BatchRun, BatchSession, runLz4 } from "./batch-shuffle.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import type { CaseReport } from "./case-report.js";
import { interleavedRuns } from "./interleaved-runs.js";
import { findRow, ratioToLimit, withRatios } from "./result-rows.js";
import { MB, networkMemory, sluiceConfig } from "./sluice-params.js";

const REMOTE = "sluice-remote blocking";
/** The remote row's limit: the bytes through a third process over TCP, both ways. */
const STORE = "fs streams through a store process";

/** Network memory of the batch case's writer: its data is 4× this. */
const BATCH_NETWORK_MEMORY_MB = 32;
/** The read memory of blocking partitions (`taskmanager.memory.framework.off-heap.batch-shuffle.size`'s default). */
const BATCH_READ_MEMORY_MB = 64;

export const case8: CaseDefinition = {
  id: 8,
  name: "batch shuffle: 100 B records, BLOCKING partition written then read, two processes",
  async run(report) {
    const o = report.options;
    const recordSize = 100;
    // 4× the network memory in framed bytes (each record with its 4-byte length).
    const records = Math.ceil((4 * BATCH_NETWORK_MEMORY_MB * 2 ** 20) / (recordSize + 4));
    const config = (compress: boolean) =>
      sluiceConfig(100, {
        ...networkMemory(`${BATCH_NETWORK_MEMORY_MB}mb`),
        "taskmanager.memory.framework.off-heap.batch-shuffle.size": `${BATCH_READ_MEMORY_MB}mb`,
        "taskmanager.network.batch-shuffle.compression.enabled": compress,
      });
    const params = (compress: boolean): BatchParams => ({
      recordSize,
      records,
      channels: 4,
      config: config(compress),
      producerBatch: 1024,
      consumerBatch: 4096,
    });
    // The worker gets the memory the writer's task manager gets for blocking partitions.
    const remoteParams = (): BatchParams => {
      const p = params(false);
      return {
        ...p,
        config: {
          ...p.config,
          "remote-shuffle.manager.rpc-port": 0,
          "remote-shuffle.manager.embedded-workers": 1,
          "remote-shuffle.worker.memory.writing-size": `${BATCH_NETWORK_MEMORY_MB}mb`,
          "remote-shuffle.worker.memory.reading-size": `${BATCH_READ_MEMORY_MB}mb`,
        },
      };
    };
    const systems: [string, Impl, BatchParams][] = [
      ["fs streams", "fs-streams", params(false)],
      [STORE, "fs-store", params(false)],
      // The same bytes as the baseline: compression off (the bench's records compress very well).
      ["sluice-tcp blocking", "sluice-tcp-blocking", params(false)],
      ["sluice-tcp blocking LZ4", "sluice-tcp-blocking", params(true)],
      // Through one shuffle worker the writer's ShuffleMaster starts: pushed there, read from there.
      [REMOTE, "sluice-remote-blocking", remoteParams()],
    ].filter(([system]) => selected(o, system as string)) as [string, Impl, BatchParams][];
    const bySystem = new Map(systems.map((spec) => [spec[0], spec]));
    const memory = new Map<string, Record<string, number>>();
    const { sessions, failures } = await interleavedRuns({
      options: o,
      caseId: 8,
      systems: systems.map(([system]) => system),
      warmUpDetail: ` (${formatCount(records)} records)`,
      open: (system) => {
        const [, impl, p] = bySystem.get(system) as [string, Impl, BatchParams];
        return BatchSession.open(o, system, impl, p);
      },
      run: (session, measured) => session.run(measured),
      collect: async (sessions, failures) => {
        for (const [system, session] of sessions) {
          memory.set(system, await session.writerMemory());
        }
        return { sessions: new Map(sessions), failures };
      },
    });
    const rows: ResultRow[] = systems.map(([system, impl, p]) => {
      const session = sessions.get(system);
      if (session === undefined) {
        return report.skipped(system, "GB/s", failures.get(system) ?? "not run");
      }
      const runs: readonly BatchRun[] = session.runs;
      const last = runs[runs.length - 1];
      return report.row({
        system,
        metric: "GB/s",
        higherIsBetter: true,
        values: runs.map((r) => r.bytesPerSecond / 1e9),
        extra: {
          recordSize,
          records,
          dataMiB: (records * (recordSize + 4)) / 2 ** 20,
          writeMs: median(runs.map((r) => r.writeMs)),
          readMs: median(runs.map((r) => r.readMs)),
          writerMemory: memory.get(system),
          ...(impl === "fs-streams" || impl === "fs-store"
            ? {}
            : {
                channels: p.channels,
                networkMemoryMB: BATCH_NETWORK_MEMORY_MB,
                batchReadMemoryMB: BATCH_READ_MEMORY_MB,
                config: p.config,
              }),
          ...(last !== undefined
            ? { lastRun: { writer: last.write.extra, reader: last.read.extra } }
            : {}),
        },
        ...(session.problems.length > 0 ? { note: `INVALID: ${session.problems.join("; ")}` } : {}),
      });
    });
    rows.push(...(await lz4Rows(report)));
    const withRatio = withRatios(rows, (r) =>
      r.metric === "LZ4 GB/s" ? "lz4-napi direct" : "fs streams",
    );
    const limitMB = BATCH_NETWORK_MEMORY_MB + BATCH_READ_MEMORY_MB + 16;
    const growth = Math.max(
      ...["sluice-tcp blocking", "sluice-tcp blocking LZ4"].map(
        (system) => memory.get(system)?.growthMB ?? Number.NaN,
      ),
    );
    const goals = [
      report.goal({
        text: "Sluice TCP blocking write+read ≥ 60% of plain fs streams",
        measured: findRow(withRatio, "sluice-tcp blocking")?.ratio,
        comparison: "≥",
        target: 0.6,
        unit: "× baseline",
      }),
      report.goal({
        text: "Sluice remote blocking (through one shuffle worker) write+read ≥ 50% of plain fs streams",
        measured: findRow(withRatio, REMOTE)?.ratio,
        comparison: "≥",
        target: 0.5,
        unit: "× baseline",
        note: ratioToLimit(withRatio, REMOTE, STORE),
      }),
      report.goal({
        text: `Sluice writer's RSS growth ≤ network memory (${BATCH_NETWORK_MEMORY_MB} MiB) + batch-read memory (${BATCH_READ_MEMORY_MB} MiB) + 16 MiB at 4× data`,
        measured: growth,
        comparison: "≤",
        target: limitMB,
        unit: "MiB",
      }),
    ];
    return { rows: withRatio, goals };
  },
};

/** LZ4 over the demo's words: Sluice's BufferCompressor beside lz4-napi called directly. */
async function lz4Rows(report: CaseReport): Promise<ResultRow[]> {
  const o = report.options;
  const systems = ["lz4 via BufferCompressor", "lz4-napi direct"];
  log("case 8 LZ4 on the demo's words, in one child");
  try {
    const result = await runLz4(o, {
      words: 1_000_000,
      durationMs: o.durationMs,
      warmupMs: o.warmupMs,
      runs: o.runs,
    });
    const extra = { inputMB: result.inputBytes / MB, buffers: result.buffers, bufferKiB: 32 };
    return [
      report.row({
        system: systems[0] as string,
        metric: "LZ4 GB/s",
        higherIsBetter: true,
        values: result.sluice.bytesPerSecond.map((b) => b / 1e9),
        extra: { ...extra, compressionRatio: result.sluice.ratio },
      }),
      report.row({
        system: systems[1] as string,
        metric: "LZ4 GB/s",
        higherIsBetter: true,
        values: result.direct.bytesPerSecond.map((b) => b / 1e9),
        extra: { ...extra, compressionRatio: result.direct.ratio },
      }),
    ];
  } catch (error) {
    const note = `failed: ${firstLine(error)}`;
    return systems.map((system) => report.skipped(system, "LZ4 GB/s", note));
  }
}

function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}
