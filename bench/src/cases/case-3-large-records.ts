/**
 * Case 3: 32 KiB records between two processes, server → client: Sluice TCP and WS against raw
 * net and raw ws, with libp2p-yamux and zeromq.js PUSH/PULL (one message per 32 KiB record) beside
 * them (GB/s).
 */
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, KiB, sluiceConfig } from "./sluice-params.js";
import { throughputRows } from "./throughput-rows.js";

export const case3: CaseDefinition = {
  id: 3,
  name: "32 KiB records, two processes, server → client",
  async run(report) {
    const size = 32 * KiB;
    const sluice = baseParams({
      recordSize: size,
      config: sluiceConfig(100),
      producerBatch: 32,
      consumerBatch: 64,
    });
    const raw = baseParams({ recordSize: size, batching: "per-record", producerBatch: 32 });
    const rows = await throughputRows(
      report,
      {
        metric: "GB/s",
        baseline: (r) =>
          r.system === "sluice-tcp"
            ? "raw net"
            : r.system === "sluice-ws"
              ? "raw ws"
              : r.system === "raw ws" || r.system === "libp2p-yamux" || r.system === "zeromq"
                ? "raw net"
                : undefined,
      },
      [
        ["raw net", "net", raw],
        ["raw ws", "ws", raw],
        ["sluice-tcp", "sluice-tcp", sluice],
        ["sluice-ws", "sluice-ws", sluice],
        ["libp2p-yamux", "yamux", raw],
        ["zeromq", "zeromq", raw],
      ],
    );
    return {
      rows,
      goals: [
        report.goal({
          text: "Sluice TCP ≥ 90% of raw net GB/s",
          measured: findRow(rows, "sluice-tcp")?.ratio,
          comparison: "≥",
          target: 0.9,
          unit: "× raw net",
        }),
        report.goal({
          text: "Sluice WS ≥ 80% of raw ws GB/s",
          measured: findRow(rows, "sluice-ws")?.ratio,
          comparison: "≥",
          target: 0.8,
          unit: "× raw ws",
          note: report.wsUnavailable,
        }),
      ],
    };
  },
};
