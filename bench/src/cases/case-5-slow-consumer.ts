/**
 * Case 5: a slow consumer (≈1 MB/s) — the peak RSS growth of each process, Sluice (bounded by its
 * network memory) against raw net/ws that ignore backpressure.
 */
import { type GoalRow, median, type ResultRow } from "../harness.js";
import type { ThroughputParams } from "../roles.js";
import { runSlowConsumer } from "../runner.js";
import type { Impl } from "../worker.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import {
  baseParams,
  DEFAULT_NETWORK_MEMORY_MB,
  MB,
  networkMemory,
  sluiceConfig,
} from "./sluice-params.js";

/** When backpressure is ignored, the producer stops queueing at this many bytes (safety). */
const QUEUE_CAP_BYTES = 1024 * 1024 * 1024;

export const case5: CaseDefinition = {
  id: 5,
  name: "slow consumer (≈1 MB/s): peak RSS growth of each process",
  async run(report) {
    const o = report.options;
    const durationMs = o.full ? 10_000 : 3_000;
    const runs = o.full ? 2 : 1;
    const rate = 1_000_000;
    const limitMB = DEFAULT_NETWORK_MEMORY_MB + 16;
    // The goal is relative to the network memory: pin it.
    const config = sluiceConfig(100, networkMemory(`${DEFAULT_NETWORK_MEMORY_MB}mb`));
    const rows: ResultRow[] = [];
    const systems: [string, Impl, ThroughputParams][] = [
      ["sluice-tcp", "sluice-tcp", baseParams({ config, consumerBytesPerSecond: rate })],
      ["sluice-ws", "sluice-ws", baseParams({ config, consumerBytesPerSecond: rate })],
      [
        "raw net, no backpressure",
        "net",
        baseParams({
          consumerBytesPerSecond: rate,
          honourBackpressure: false,
          queuedCapBytes: QUEUE_CAP_BYTES,
        }),
      ],
      [
        "raw ws, no backpressure",
        "ws",
        baseParams({
          consumerBytesPerSecond: rate,
          honourBackpressure: false,
          queuedCapBytes: QUEUE_CAP_BYTES,
        }),
      ],
    ];
    for (const [system, impl, params] of systems) {
      if (impl === "sluice-ws" && report.wsUnavailable !== undefined) {
        rows.push(
          report.skipped(
            `${system} producer`,
            "RSS growth MiB",
            `not run: ${report.wsUnavailable}`,
          ),
        );
        rows.push(
          report.skipped(
            `${system} consumer`,
            "RSS growth MiB",
            `not run: ${report.wsUnavailable}`,
          ),
        );
        continue;
      }
      log(`case 5 ${system} (${durationMs / 1000} s × ${runs})`);
      const producer: number[] = [];
      const consumer: number[] = [];
      const rates: number[] = [];
      const extras: Record<string, unknown>[] = [];
      let failure: string | undefined;
      for (let run = 0; run < runs; run++) {
        try {
          const result = await runSlowConsumer(o, system, impl, params, durationMs);
          producer.push(result.producer.growthMB as number);
          consumer.push(result.consumer.growthMB as number);
          rates.push(result.consumed?.bytesPerSecond ?? Number.NaN);
          extras.push({
            producer: result.producer,
            consumer: result.consumer,
            produced: result.produce.extra,
          });
        } catch (error) {
          failure = `failed: ${firstLine(error)}`;
        }
      }
      const common = {
        consumerMBps: median(rates) / MB,
        durationS: durationMs / 1000,
        ...(impl.startsWith("sluice")
          ? { networkMemoryMB: DEFAULT_NETWORK_MEMORY_MB, goalMB: limitMB }
          : { queueCapMB: QUEUE_CAP_BYTES / 2 ** 20 }),
        runs: extras,
      };
      for (const [side, values] of [
        ["producer", producer],
        ["consumer", consumer],
      ] as const) {
        rows.push(
          report.row({
            system: `${system} ${side}`,
            metric: "RSS growth MiB",
            higherIsBetter: false,
            values,
            extra: common,
            ...(failure !== undefined ? { note: failure } : {}),
          }),
        );
      }
    }
    const goals: GoalRow[] = [];
    for (const system of ["sluice-tcp", "sluice-ws"]) {
      const worst = Math.max(
        findRow(rows, `${system} producer`)?.max ?? Number.NaN,
        findRow(rows, `${system} consumer`)?.max ?? Number.NaN,
      );
      goals.push(
        report.goal({
          text: `${system}: RSS growth of each process ≤ network memory (${DEFAULT_NETWORK_MEMORY_MB} MiB) + 16 MiB`,
          measured: worst,
          comparison: "≤",
          target: limitMB,
          unit: "MiB",
          note: system === "sluice-ws" ? report.wsUnavailable : undefined,
        }),
      );
    }
    return { rows, goals };
  },
};
