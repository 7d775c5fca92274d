/**
 * Case 6: the buffer-timeout sweep — 100 B keyed records over 4 channels, Sluice TCP at 0, 1, 5
 * and 100 ms.
 */
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

export const case6: CaseDefinition = {
  id: 6,
  name: "buffer-timeout sweep: 100 B records, keyed over 4 channels, Sluice TCP",
  async run(report) {
    const rows = await throughputRows(
      report,
      { metric: "records/s", baseline: () => "sluice-tcp 100 ms" },
      [0, 1, 5, 100].map(
        (timeout): SystemSpec => [
          `sluice-tcp ${timeout} ms`,
          "sluice-tcp",
          baseParams({ bufferTimeoutMs: timeout, config: sluiceConfig(timeout) }),
        ],
      ),
    );
    return {
      rows,
      goals: [
        report.goal({
          text: "1 ms ≥ 75% of 100 ms",
          measured: findRow(rows, "sluice-tcp 1 ms")?.ratio,
          comparison: "≥",
          target: 0.75,
          unit: "× 100 ms",
        }),
      ],
    };
  },
};
