/**
 * Case 10: a memory-constrained deploy. A round-robin exchange of 1,000 channels (hash
 * partitioning stops at 128 key groups) (one producer, a
 * consumer gate of 1,000 remote channels) on 64 MiB of network memory per process, where the
 * gate's 2,000 exclusive buffers cannot be guaranteed beside the half of the buffers kept for
 * later pools, so the gate deploys in floating-only mode with
 * `taskmanager.network.memory.exclusive-buffers-fallback` on (Flink, and Sluice by default, fail
 * there with 'Insufficient number of network buffers'); against the same exchange on 128 MiB,
 * where every pool gets its full buffers. Sluice TCP.
 */
import type { CaseDefinition } from "./case-definition.js";
import { findRow } from "./result-rows.js";
import { baseParams, networkMemory, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

/** Channels of the exchange: one consumer gate reads all of them. */
const CHANNELS = 1000;
/** The budget the case is about: the gate's exclusive buffers do not fit beside the reserve. */
const CONSTRAINED = "64mb";
/** Enough for every pool's full guarantee (2,001 buffers for the gate, 1,001 for the output). */
const AMPLE = "128mb";

const CONSTRAINED_ROW = `sluice-tcp ${CHANNELS} ch ${CONSTRAINED}`;
const AMPLE_ROW = `sluice-tcp ${CHANNELS} ch ${AMPLE}`;

export const case10: CaseDefinition = {
  id: 10,
  name: "Memory-constrained deploy: 1,000 channels per gate on 64 MiB against ample memory, Sluice TCP",
  async run(report) {
    const specs: SystemSpec[] = [AMPLE, CONSTRAINED].map((memory) => [
      `sluice-tcp ${CHANNELS} ch ${memory}`,
      "sluice-tcp",
      baseParams({
        channels: CHANNELS,
        selector: "rebalance",
        config: sluiceConfig(100, {
          ...networkMemory(memory),
          "taskmanager.network.memory.exclusive-buffers-fallback": true,
        }),
      }),
    ]);
    const rows = await throughputRows(
      report,
      {
        metric: "records/s",
        baseline: (r) => (r.system === CONSTRAINED_ROW ? AMPLE_ROW : undefined),
      },
      specs,
    );
    const constrained = findRow(rows, CONSTRAINED_ROW);
    const ample = findRow(rows, AMPLE_ROW);
    const goals = [
      report.goal({
        text: "1,000 channels per gate on 64 MiB deploy and run at ≥ 0.5× of ample memory",
        measured:
          constrained !== undefined && ample !== undefined
            ? constrained.median / ample.median
            : undefined,
        comparison: "≥",
        target: 0.5,
        unit: "×",
        note: constrained?.note ?? ample?.note,
      }),
    ];
    return { rows, goals };
  },
};
