/**
 * Case 12: operator chaining and the typed API — a map chain of 3 operators chained into one task
 * against the same chain unchained (5 tasks), and the typed API's keyed count against the
 * hand-written JobGraph of the same job, in one child with the local plugin.
 */
import { Child, profileArgs } from "../harness.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import { DATASTREAM_SYSTEMS, type DatastreamResult } from "./datastream-bench.js";
import { findRow, withRatios } from "./result-rows.js";

export const case12: CaseDefinition = {
  id: 12,
  name: "operator chaining: a 3-map chain chained vs unchained; the typed API's keyed count vs its hand-written JobGraph",
  async run(report) {
    const o = report.options;
    const args = {
      chainRecords: o.full ? 4_000_000 : 1_000_000,
      keyedRecords: o.full ? 2_000_000 : 500_000,
      runs: o.runs,
    };
    log(
      `case 12 operator chaining (${DATASTREAM_SYSTEMS.length} jobs × ${o.runs + 1} runs) in one child`,
    );
    const child = new Child("datastream", profileArgs(o, "datastream", "datastream"), 0);
    let result: DatastreamResult;
    try {
      result = await child.request<DatastreamResult>("datastream", args, 600_000);
    } catch (error) {
      const note = `failed: ${firstLine(error)}`;
      return {
        rows: DATASTREAM_SYSTEMS.map((system) => report.skipped(system, "records/s", note)),
        goals: [],
      };
    } finally {
      await child.close();
    }
    const note =
      result.checks.length > 0 ? `INVALID: ${result.checks.slice(0, 3).join("; ")}` : undefined;
    const rows = withRatios(
      DATASTREAM_SYSTEMS.map((system) =>
        report.row({
          system,
          metric: "records/s",
          higherIsBetter: true,
          values: result.recordsPerSecond[system],
          extra: { vertices: result.vertices[system], args },
          ...(note !== undefined ? { note } : {}),
        }),
      ),
      (r) =>
        r.system === "map chain ×3, chained"
          ? "map chain ×3, unchained"
          : r.system === "keyed count, typed API"
            ? "keyed count, hand-written JobGraph"
            : undefined,
    );
    const goals = [
      report.goal({
        text: "map chain ×3: chained ≥ 3× unchained",
        measured: findRow(rows, "map chain ×3, chained")?.ratio,
        comparison: "≥",
        target: 3,
        unit: "×",
      }),
      report.goal({
        text: "keyed count: typed API ≥ 0.9× the hand-written JobGraph",
        measured: findRow(rows, "keyed count, typed API")?.ratio,
        comparison: "≥",
        target: 0.9,
        unit: "×",
      }),
    ];
    return { rows, goals };
  },
};
