/**
 * Case 6: the buffer-timeout sweep — 100 B keyed records over 4 channels, Sluice TCP at 0, 1, 5
 * and 100 ms.
 */
import type { CaseDefinition } from "./case-definition.js";
import { goal } from "./goal.js";
import { findRow, withRatios } from "./result-rows.js";
import { baseParams, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

export const case6: CaseDefinition = {
  id: 6,
  name: "buffer-timeout sweep: 100 B records, keyed over 4 channels, Sluice TCP",
  async run(ctx) {
    const name = this.name;
    const rows = await throughputRows(
      ctx,
      { caseId: 6, caseName: name, metric: "records/s" },
      [0, 1, 5, 100].map(
        (timeout): SystemSpec => [
          `sluice-tcp ${timeout} ms`,
          "sluice-tcp",
          baseParams({ bufferTimeoutMs: timeout, config: sluiceConfig(timeout) }),
        ],
      ),
    );
    const withRatio = withRatios(rows, () => "sluice-tcp 100 ms");
    return {
      rows: withRatio,
      goals: [
        goal(ctx, {
          caseId: 6,
          text: "1 ms ≥ 75% of 100 ms",
          measured: findRow(withRatio, "sluice-tcp 1 ms")?.ratio,
          comparison: "≥",
          target: 0.75,
          unit: "× 100 ms",
        }),
      ],
    };
  },
};
