/**
 * Case 0: the core and in-process benchmarks in one child — memcpy and serde as the ceiling, the
 * in-process exchange over 4 and 1 local channels, and the record readers' three decode modes.
 */
import { Child, median, profileArgs } from "../harness.js";
import { READER_MODES } from "../roles.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import type { CoreResult } from "./core-bench.js";
import { findRow, ratioToLimit, withRatios } from "./result-rows.js";

/** The in-process row's limit: core serde plus the keyed routing, none of the runtime's layers. */
const KEYED_SERDE = "core serde, keyed over 4 ch";

export const case0: CaseDefinition = {
  id: 0,
  name: "core: serialize+deserialize vs memcpy; in-process 4 local channels (100 B records)",
  async run(report) {
    const o = report.options;
    log("case 0 core (memcpy, serde, in-process) in one child");
    const child = new Child("core", profileArgs(o, "core", "core"), 0);
    let result: CoreResult;
    try {
      result = await child.request<CoreResult>(
        "core",
        { recordSize: 100, durationMs: o.durationMs, warmupMs: o.warmupMs, runs: o.runs },
        (o.durationMs * 8 + o.warmupMs * 8) * (o.runs + 1) + 60_000,
      );
    } catch (error) {
      const note = `failed: ${firstLine(error)}`;
      return {
        rows: [
          report.skipped("memcpy 32 KiB", "records/s", note),
          report.skipped("core serde", "records/s", note),
          report.skipped(KEYED_SERDE, "records/s", note),
          report.skipped("in-process 4 ch", "records/s", note),
          report.skipped("in-process 1 ch", "records/s", note),
          ...READER_MODES.map((mode) => report.skipped(`reader: ${mode}`, "records/s", note)),
        ],
        goals: [],
      };
    } finally {
      await child.close();
    }
    const framed = 104;
    const note = result.checks.length > 0 ? `INVALID: ${result.checks.join("; ")}` : undefined;
    const rows = withRatios(
      [
        report.row({
          system: "memcpy 32 KiB",
          metric: "records/s",
          higherIsBetter: true,
          values: result.memcpyBytesPerSecond.map((b) => b / framed),
          extra: {
            GBps: median(result.memcpyBytesPerSecond) / 1e9,
            note: "32 KiB Buffer.set loop; records/s = bytes/s ÷ 104 (a framed 100-byte record)",
          },
        }),
        report.row({
          system: "core serde",
          metric: "records/s",
          higherIsBetter: true,
          values: result.serdeRecordsPerSecond,
          extra: { GBps: (median(result.serdeRecordsPerSecond) * framed) / 1e9 },
          ...(note !== undefined ? { note } : {}),
        }),
        report.row({
          system: KEYED_SERDE,
          metric: "records/s",
          higherIsBetter: true,
          values: result.keyedSerdeRecordsPerSecond,
          extra: {
            GBps: (median(result.keyedSerdeRecordsPerSecond) * framed) / 1e9,
            channels: 4,
            selector: "key-group hash",
            note: "core serde with each record routed by key into one of 4 channels' buffers",
          },
          ...(note !== undefined ? { note } : {}),
        }),
        report.row({
          system: "in-process 4 ch",
          metric: "records/s",
          higherIsBetter: true,
          values: result.localRecordsPerSecond,
          extra: {
            GBps: (median(result.localRecordsPerSecond) * framed) / 1e9,
            channels: 4,
            bufferTimeoutMs: 100,
            selector: "key-group hash",
          },
          ...(note !== undefined ? { note } : {}),
        }),
        report.row({
          system: "in-process 1 ch",
          metric: "records/s",
          higherIsBetter: true,
          values: result.localOneChannelRecordsPerSecond,
          extra: {
            GBps: (median(result.localOneChannelRecordsPerSecond) * framed) / 1e9,
            channels: 1,
            bufferTimeoutMs: 100,
            selector: "key-group hash",
            note: "the 4-channel exchange's work with every record appended to one buffer",
          },
          ...(note !== undefined ? { note } : {}),
        }),
        ...READER_MODES.map((mode) =>
          report.row({
            system: `reader: ${mode}`,
            metric: "records/s",
            higherIsBetter: true,
            values: result.readers[mode],
            extra: {
              GBps: (median(result.readers[mode]) * framed) / 1e9,
              decode:
                mode === "allocating"
                  ? "getNextRecord → deserialize: a new record and a copy of its bytes"
                  : mode === "reusing"
                    ? "getNextRecordInto → deserializeInto: one record overwritten"
                    : "readNextRecord: the key read in place",
            },
            ...(note !== undefined ? { note } : {}),
          }),
        ),
      ],
      (r) =>
        r.system === "core serde"
          ? "memcpy 32 KiB"
          : r.system === "in-process 4 ch" ||
              r.system === "in-process 1 ch" ||
              r.system === KEYED_SERDE
            ? "core serde"
            : r.system === "reader: reusing" || r.system === "reader: view"
              ? "reader: allocating"
              : undefined,
    );
    const goals = [
      report.goal({
        text: "in-process 4 channels ≥ 90% of core serde",
        measured: findRow(rows, "in-process 4 ch")?.ratio,
        comparison: "≥",
        target: 0.9,
        unit: "× core serde",
        note: ratioToLimit(rows, "in-process 4 ch", KEYED_SERDE),
      }),
    ];
    return { rows, goals };
  },
};
