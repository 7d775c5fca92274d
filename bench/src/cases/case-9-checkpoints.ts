/**
 * Case 9: checkpoints under back-pressure (the sink at 2.5% of the source) — aligned, unaligned,
 * aligned with buffer debloating, and aligned with a 100 ms alignment timeout.
 */
import { Child, median, profileArgs } from "../harness.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import type { CheckpointModeResult } from "./checkpoint-bench.js";
import { findRow, withRatios } from "./result-rows.js";

/** The checkpointing modes the child runs one after the other. */
const MODES = 4;

export const case9: CaseDefinition = {
  id: 9,
  name: "checkpoints under back-pressure (sink at 2.5% of the source): aligned, unaligned, aligned + debloating, aligned with 100 ms timeout",
  async run(report) {
    const o = report.options;
    const durationMs = o.full ? 12_000 : 5_000;
    const args = {
      durationMs,
      warmupMs: 1_500,
      producerRate: 100_000,
      consumerRate: 2_500,
      recordSize: 100,
    };
    log(`case 9 checkpoints (${MODES} modes × ${durationMs / 1000} s) in one child`);
    const child = new Child("checkpoints", profileArgs(o, "checkpoints", "checkpoints"), 0);
    let results: CheckpointModeResult[];
    try {
      results = await child.request<CheckpointModeResult[]>(
        "checkpoints",
        args,
        durationMs * MODES + 120_000,
      );
    } catch (error) {
      const note = `failed: ${firstLine(error)}`;
      return {
        rows: ["aligned", "unaligned", "aligned+debloat", "aligned with 100 ms timeout"].map(
          (system) => report.skipped(system, "checkpoint ms", note),
        ),
        goals: [],
      };
    } finally {
      await child.close();
    }
    const checkpointRows = withRatios(
      results.map((r) =>
        report.row({
          system: r.mode,
          metric: "checkpoint ms",
          higherIsBetter: false,
          values: r.checkpointMs,
          extra: {
            checkpoints: r.checkpointMs.length,
            inFlightKiB: median(r.inFlightBytes) / 1024,
            persistedKiB: median(r.persistedBytes) / 1024,
            emitted: r.emitted,
            consumed: r.consumed,
            sinkRecordsPerSecond: r.consumed / (r.elapsedMs / 1000),
            args,
            config: r.config,
          },
          ...(r.checks.length > 0 ? { note: `INVALID: ${r.checks.join("; ")}` } : {}),
        }),
      ),
      (r) => (r.system === "aligned" ? undefined : "aligned"),
    );
    const inFlightRows = withRatios(
      results
        .filter((r) => r.mode === "aligned" || r.mode === "aligned+debloat")
        .map((r) =>
          report.row({
            system: `${r.mode} in-flight`,
            metric: "in-flight KiB",
            higherIsBetter: false,
            values: r.inFlightBytes.map((b) => b / 1024),
          }),
        ),
      (r) => (r.system === "aligned in-flight" ? undefined : "aligned in-flight"),
    );
    const rows = [...checkpointRows, ...inFlightRows];
    const ratio = (system: string) => findRow(rows, system)?.ratio;
    const goals = [
      report.goal({
        text: "unaligned checkpoint duration ≤ 10% of aligned",
        measured: ratio("unaligned"),
        comparison: "≤",
        target: 0.1,
        unit: "×",
      }),
      report.goal({
        text: "aligned + debloating checkpoint duration ≤ 25% of aligned",
        measured: ratio("aligned+debloat"),
        comparison: "≤",
        target: 0.25,
        unit: "×",
      }),
      report.goal({
        text: "aligned with 100 ms timeout: checkpoint duration ≤ 20% of aligned",
        measured: ratio("aligned with 100 ms timeout"),
        comparison: "≤",
        target: 0.2,
        unit: "×",
      }),
      report.goal({
        text: "in-flight bytes with debloating ≤ 25% of without",
        measured: ratio("aligned+debloat in-flight"),
        comparison: "≤",
        target: 0.25,
        unit: "×",
      }),
    ];
    return { rows, goals };
  },
};
