/**
 * Case 1: 100 B keyed records over 4 channels between two processes — Sluice TCP and WS against
 * hand-batched raw net, per-record raw net/ws, grpc-js, libp2p-yamux and zeromq.js PUSH/PULL (one
 * message per record, and hand-batched); and the cost of exporting
 * the metrics to Prometheus.
 */
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

const GRPC_RAISED_WINDOW = 8 * 1024 * 1024;
/** Case 1's Sluice TCP with the Prometheus reporter on in both processes, scraped every second. */
const METRICS_EXPORTED = "sluice-tcp metrics exported";
const METRICS_PORT_KEY = "metrics.reporter.prom.port";
/** Case 1's Sluice TCP measured a second time, for the noise of the metrics comparison. */
const TCP_REPEAT = "sluice-tcp (repeat)";

export const case1: CaseDefinition = {
  id: 1,
  name: "100 B records, keyed over 4 channels, buffer timeout 100 ms, two processes",
  async run(report) {
    const sluice = baseParams({ config: sluiceConfig(100) });
    // Metrics exported: each process also serves its metrics for Prometheus and is scraped every
    // second (15× Prometheus's default interval). The task metrics themselves are counted in
    // both variants: the runtime always counts them, as Flink's does.
    const exported = baseParams({
      config: { ...sluiceConfig(100), [METRICS_PORT_KEY]: "0" },
      metricsScrapeIntervalMs: 1000,
    });
    const systems: SystemSpec[] = [
      ["raw net batched", "net", baseParams({ batching: "batched" })],
      ["sluice-tcp", "sluice-tcp", sluice],
      [METRICS_EXPORTED, "sluice-tcp", exported],
      // The same system again: how far two identical systems drift apart in this run.
      [TCP_REPEAT, "sluice-tcp", sluice],
      ["sluice-ws", "sluice-ws", sluice],
      ["raw net per-record", "net", baseParams({ batching: "per-record" })],
      ["raw ws per-record", "ws", baseParams({ batching: "per-record" })],
      ["grpc-js", "grpc", baseParams({ batching: "per-record" })],
      [
        "grpc-js 8 MiB window",
        "grpc",
        baseParams({ batching: "per-record", grpcWindow: GRPC_RAISED_WINDOW }),
      ],
      ["libp2p-yamux", "yamux", baseParams({ batching: "per-record" })],
      ["zeromq per-record", "zeromq", baseParams({ batching: "per-record" })],
      ["zeromq batched", "zeromq", baseParams({ batching: "batched" })],
    ];
    const rows = await throughputRows(
      report,
      { metric: "records/s", baseline: () => "raw net batched" },
      systems,
    );
    const tcp = findRow(rows, "sluice-tcp");
    const tcpExported = findRow(rows, METRICS_EXPORTED);
    const tcpRepeat = findRow(rows, TCP_REPEAT);
    const grpc = findRow(rows, "grpc-js");
    const grpcRaised = findRow(rows, "grpc-js 8 MiB window");
    const goals = [
      report.goal({
        text: "Sluice TCP ≥ 65% of hand-batched raw net",
        measured: tcp?.ratio,
        comparison: "≥",
        target: 0.65,
        unit: "× baseline",
      }),
      report.goal({
        text: "Sluice TCP with metrics exported (Prometheus, scraped every 1 s) ≥ 90% of Sluice TCP (mean of its two rows)",
        measured:
          tcp !== undefined && tcpExported !== undefined && tcpRepeat !== undefined
            ? tcpExported.median / ((tcp.median + tcpRepeat.median) / 2)
            : undefined,
        comparison: "≥",
        target: 0.9,
        unit: "×",
        note:
          tcp !== undefined && tcpRepeat !== undefined
            ? `noise: the repeat of Sluice TCP measured ${(tcpRepeat.median / tcp.median).toFixed(2)}× the first`
            : undefined,
      }),
      report.goal({
        text: "Sluice TCP ≥ 50× grpc-js one message per record (default window)",
        measured: tcp !== undefined && grpc !== undefined ? tcp.median / grpc.median : undefined,
        comparison: "≥",
        target: 50,
        unit: "×",
        note:
          grpcRaised !== undefined && tcp !== undefined
            ? `vs raised window: ${(tcp.median / grpcRaised.median).toFixed(1)}×`
            : undefined,
      }),
    ];
    return { rows, goals };
  },
};
