/**
 * Case 4: latency — a ping-pong of one 100 B record with buffer timeout 0 (round-trip µs).
 */
import { median, quantile, type ResultRow, selected } from "../harness.js";
import { runLatency } from "../runner.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import { findRow, withRatios } from "./result-rows.js";
import { sluiceConfig } from "./sluice-params.js";

export const case4: CaseDefinition = {
  id: 4,
  name: "latency: ping-pong of one 100 B record, buffer timeout 0 (RTT µs)",
  async run(report) {
    const o = report.options;
    const perRun = o.full ? 5000 : 1000;
    const warmup = o.full ? 2000 : 500;
    const params = { recordSize: 100, config: sluiceConfig(0) };
    const rows: ResultRow[] = [];
    for (const [system, impl] of [
      ["raw net", "net"],
      ["sluice-tcp", "sluice-tcp"],
      ["sluice-ws", "sluice-ws"],
      ["raw ws", "ws"],
      ["grpc-js", "grpc"],
    ] as const) {
      if (!selected(o, system)) continue;
      if (impl === "sluice-ws" && report.wsUnavailable !== undefined) {
        rows.push(report.skipped(system, "p50 RTT µs", `not run: ${report.wsUnavailable}`));
        continue;
      }
      log(`case 4 ${system}`);
      try {
        const batches = await runLatency(o, system, impl, params, warmup, perRun, o.runs);
        const per = batches.map((b) => Float64Array.from(b).sort());
        const p = (q: number) => per.map((s) => quantile(s, q));
        rows.push({
          ...report.row({
            system,
            metric: "p50 RTT µs",
            higherIsBetter: false,
            values: p(0.5),
            extra: {
              p99: median(p(0.99)),
              p999: median(p(0.999)),
              mean: median(per.map((s) => s.reduce((a, v) => a + v, 0) / s.length)),
              pingsPerRun: perRun,
              warmupPings: warmup,
            },
          }),
        });
      } catch (error) {
        rows.push(report.skipped(system, "p50 RTT µs", `failed: ${firstLine(error)}`));
      }
    }
    const withRatio = withRatios(rows, () => "raw net");
    return {
      rows: withRatio,
      goals: [
        report.goal({
          text: "Sluice TCP p50 RTT ≤ 1.3× raw net",
          measured: findRow(withRatio, "sluice-tcp")?.ratio,
          comparison: "≤",
          target: 1.3,
          unit: "× raw net",
        }),
      ],
    };
  },
};
