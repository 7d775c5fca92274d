/**
 * Case 3: 32 KiB records between two processes, server → client: Sluice TCP and WS against raw
 * net and raw ws (GB/s).
 */
import type { CaseDefinition } from "./case-definition.js";
import { goal } from "./goal.js";
import { findRow, withRatios } from "./result-rows.js";
import { baseParams, KiB, sluiceConfig } from "./sluice-params.js";
import { throughputRows } from "./throughput-rows.js";

export const case3: CaseDefinition = {
  id: 3,
  name: "32 KiB records, two processes, server → client",
  async run(ctx) {
    const name = this.name;
    const size = 32 * KiB;
    const sluice = baseParams({
      recordSize: size,
      config: sluiceConfig(100),
      producerBatch: 32,
      consumerBatch: 64,
    });
    const raw = baseParams({ recordSize: size, batching: "per-record", producerBatch: 32 });
    const rows = await throughputRows(ctx, { caseId: 3, caseName: name, metric: "GB/s" }, [
      ["raw net", "net", raw],
      ["raw ws", "ws", raw],
      ["sluice-tcp", "sluice-tcp", sluice],
      ["sluice-ws", "sluice-ws", sluice],
      ["libp2p-yamux", "yamux", raw],
    ]);
    const withRatio = withRatios(rows, (r) =>
      r.system === "sluice-tcp"
        ? "raw net"
        : r.system === "sluice-ws"
          ? "raw ws"
          : r.system === "raw ws" || r.system === "libp2p-yamux"
            ? "raw net"
            : undefined,
    );
    return {
      rows: withRatio,
      goals: [
        goal(ctx, {
          caseId: 3,
          text: "Sluice TCP ≥ 80% of raw net GB/s",
          measured: findRow(withRatio, "sluice-tcp")?.ratio,
          comparison: "≥",
          target: 0.8,
          unit: "× raw net",
        }),
        goal(ctx, {
          caseId: 3,
          text: "Sluice WS ≥ 70% of raw ws GB/s",
          measured: findRow(withRatio, "sluice-ws")?.ratio,
          comparison: "≥",
          target: 0.7,
          unit: "× raw ws",
          note: ctx.wsUnavailable,
        }),
      ],
    };
  },
};
