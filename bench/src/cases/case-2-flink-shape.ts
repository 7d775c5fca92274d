/**
 * Case 2: the shape of Flink's own network benchmark — 12 B records (int64 + length), round-robin
 * over 100 and 1000 channels, one producer process, Sluice TCP.
 */
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, networkMemory, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

export const case2: CaseDefinition = {
  id: 2,
  name: "Flink's shape: 12 B records (int64 + length), round-robin, one producer process, Sluice TCP",
  async run(report) {
    const specs: SystemSpec[] = [];
    for (const [channels, flushMs] of [
      [100, 100],
      [100, 1],
      [1000, 100],
      [1000, 1],
    ] as const) {
      // Flink's harness sizes each side to max(2048, writers × channels × 4) buffers.
      const network = `${Math.max(2048, channels * 4) * 32}kb`;
      const params = baseParams({
        recordSize: 8,
        recordKind: "int64",
        channels,
        selector: "rebalance",
        bufferTimeoutMs: flushMs,
        config: sluiceConfig(flushMs, networkMemory(network)),
        producerBatch: 4096,
        consumerBatch: 16384,
      });
      specs.push([`sluice-tcp ${channels} ch ${flushMs} ms`, "sluice-tcp", params]);
    }
    const rows = await throughputRows(
      report,
      { metric: "records/s", baseline: () => "sluice-tcp 100 ch 100 ms" },
      specs,
    );
    const r100 = findRow(rows, "sluice-tcp 100 ch 100 ms");
    const r1000 = findRow(rows, "sluice-tcp 1000 ch 100 ms");
    const r1000f = findRow(rows, "sluice-tcp 1000 ch 1 ms");
    const r100f = findRow(rows, "sluice-tcp 100 ch 1 ms");
    const goals = [
      report.goal({
        text: "≥ 10 M records/s from one producer process (100 ch, 100 ms)",
        measured: r100?.median,
        comparison: "≥",
        target: 10e6,
        unit: "records/s",
      }),
      report.goal({
        text: "1000 channels ≥ 80% of 100 channels (100 ms flush)",
        measured:
          r1000 !== undefined && r100 !== undefined ? r1000.median / r100.median : undefined,
        comparison: "≥",
        target: 0.8,
        unit: "×",
        note:
          r1000f !== undefined && r100f !== undefined
            ? `1 ms flush: ${(r1000f.median / r100f.median).toFixed(2)}×`
            : undefined,
      }),
    ];
    return { rows, goals };
  },
};
