/**
 * The throughput systems of a case, run interleaved (see interleaved-runs.ts) through
 * ThroughputSession: one row per system, records/s or GB/s (payload bytes).
 */
import { median, type ResultRow, selected } from "../harness.js";
import type { ThroughputParams } from "../roles.js";
import { type ThroughputRun, ThroughputSession } from "../runner.js";
import type { Impl } from "../worker.js";
import type { CaseReport } from "./case-report.js";
import { interleavedRuns } from "./interleaved-runs.js";
import { withRatios } from "./result-rows.js";
import { MB } from "./sluice-params.js";

/** A throughput system of a case: its row name, implementation and settings. */
export type SystemSpec = readonly [system: string, impl: Impl, params: ThroughputParams];

/** The metric of a case's throughput rows, and the system each row is compared with. */
export interface ThroughputRowsSpec {
  readonly metric: "records/s" | "GB/s";
  /** The system whose median a row's ratio divides by (undefined: no ratio). */
  readonly baseline: (row: ResultRow) => string | undefined;
}

/**
 * Runs the selected systems of `allSpecs` interleaved; returns one row per system (a skipped
 * row, with the reason, for one that did not run or failed), with its ratio to its baseline.
 */
export async function throughputRows(
  report: CaseReport,
  { metric, baseline }: ThroughputRowsSpec,
  allSpecs: readonly SystemSpec[],
): Promise<ResultRow[]> {
  const { ctx } = report;
  const o = ctx.options;
  const specs = allSpecs.filter(([system]) => selected(o, system));
  const bySystem = new Map(specs.map((spec) => [spec[0], spec]));
  const specOf = (system: string) => bySystem.get(system) as SystemSpec;
  return interleavedRuns({
    options: o,
    caseId: report.caseId,
    systems: specs.map(([system]) => system),
    notRunBecause: (system) =>
      specOf(system)[1] === "sluice-ws" && ctx.wsUnavailable !== undefined
        ? `not run: ${ctx.wsUnavailable}`
        : undefined,
    open: (system) => {
      const [, impl, params] = specOf(system);
      return ThroughputSession.open(o, system, impl, params);
    },
    run: (session, measured) => session.run(measured ? o.durationMs : o.warmupMs, measured),
    collect: (sessions, failures) =>
      specs.map(([system, impl, params]) => {
        const session = sessions.get(system);
        if (session === undefined) {
          return report.skipped(system, metric, failures.get(system) ?? "not run");
        }
        return sessionRow(report, metric, session, impl, params);
      }),
  }).then((rows) => withRatios(rows, baseline));
}

function sessionRow(
  report: CaseReport,
  metric: ThroughputRowsSpec["metric"],
  session: ThroughputSession,
  impl: Impl,
  params: ThroughputParams,
): ResultRow {
  const runs = session.runs;
  const values = runs.map((r) => (metric === "GB/s" ? r.bytesPerSecond / 1e9 : r.recordsPerSecond));
  const last = runs[runs.length - 1];
  return report.row({
    system: session.system,
    metric,
    higherIsBetter: true,
    values,
    extra: {
      recordSize: params.recordSize,
      payloadMBps: median(runs.map((r) => r.bytesPerSecond / MB)),
      recordsPerSecond: median(runs.map((r) => r.recordsPerSecond)),
      recordsPerRun: runs.map((r) => r.received),
      ...(impl.startsWith("sluice")
        ? {
            channels: params.channels,
            bufferTimeoutMs: params.bufferTimeoutMs,
            config: params.config,
          }
        : { batching: params.batching }),
      ...(params.grpcWindow !== undefined ? { grpcFlowControlWindow: params.grpcWindow } : {}),
      ...processUsage(runs),
      ...(last !== undefined
        ? { lastRun: { producer: last.produce.extra, consumer: last.drain.extra } }
        : {}),
    },
    ...(session.problems.length > 0 ? { note: `INVALID: ${session.problems.join("; ")}` } : {}),
  });
}

/** What one side's process spent on the runs (the worker adds `usage` to each side's extra). */
interface SideUsage {
  readonly eventLoopBusy: number;
  readonly userMs: number;
  readonly systemMs: number;
}

/**
 * Per side, the medians over the runs of how busy its event loop was and its CPU time per record
 * moved, in user space and in the kernel: the side whose loop is near 1 bounds the pair, and its
 * user and kernel nanoseconds per record compare with another system's in the same run.
 */
function processUsage(runs: readonly ThroughputRun[]): { processUsage?: object } {
  if (runs.length === 0) return {};
  const side = (usageOf: (run: ThroughputRun) => unknown) => {
    const usages = runs.map(usageOf) as (SideUsage | undefined)[];
    if (usages.some((u) => u === undefined)) return undefined;
    const per = (pick: (u: SideUsage, run: ThroughputRun) => number) =>
      median(usages.map((u, i) => pick(u as SideUsage, runs[i] as ThroughputRun)));
    const nsPerRecord = (ms: number, run: ThroughputRun) => (ms * 1e6) / Math.max(run.received, 1);
    return {
      eventLoopBusy: per((u) => u.eventLoopBusy),
      userNsPerRecord: per((u, run) => nsPerRecord(u.userMs, run)),
      systemNsPerRecord: per((u, run) => nsPerRecord(u.systemMs, run)),
    };
  };
  const producer = side((run) => run.produce.extra?.usage);
  const consumer = side((run) => run.drain.extra?.usage);
  return producer === undefined || consumer === undefined
    ? {}
    : { processUsage: { producer, consumer } };
}
