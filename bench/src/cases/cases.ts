/**
 * The benchmark cases of docs/benchmarks.md (0 = the core and in-process benchmarks; 7 = TLS
 * beside plaintext), each producing result rows (medians, min/max, ratios against the case's
 * baseline from the same run) and the goal rows computed from them.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { BatchParams } from "../batch-roles.js";
import {
  type BenchOptions,
  Child,
  type GoalRow,
  median,
  profileArgs,
  quantile,
  type ResultRow,
  selected,
  stats,
} from "../harness.js";
import type { ThroughputParams } from "../roles.js";
import { READER_MODES } from "../roles.js";
import { runLatency, runSlowConsumer, ThroughputSession } from "../runner.js";
import type { Impl } from "../worker.js";
import { type BatchRun, BatchSession, runLz4 } from "./batch-shuffle.js";
import type { CheckpointModeResult } from "./checkpoint-bench.js";
import type { CoreResult } from "./core-bench.js";

export interface CaseContext {
  readonly options: BenchOptions;
  readonly runId: string;
  /** Why the WS plugin cannot run, or undefined when it can. */
  readonly wsUnavailable: string | undefined;
}

export interface CaseResult {
  readonly rows: ResultRow[];
  readonly goals: GoalRow[];
}

export interface CaseDefinition {
  readonly id: number;
  readonly name: string;
  run(ctx: CaseContext): Promise<CaseResult>;
}

const KiB = 1024;
const MB = 1_000_000;
/** Network memory the Sluice environments run with where a case does not say (the default). */
const DEFAULT_NETWORK_MEMORY_MB = 64;

/** Config that pins a TaskExecutor's network memory to `size`, whatever its total memory. */
function networkMemory(size: string): Record<string, string> {
  return { "taskmanager.memory.network.min": size, "taskmanager.memory.network.max": size };
}

function baseParams(overrides: Partial<ThroughputParams>): ThroughputParams {
  return {
    recordSize: 100,
    recordKind: "keyed",
    channels: 4,
    selector: "keyed",
    bufferTimeoutMs: 100,
    config: { "execution.buffer-timeout.interval": "100ms" },
    batching: "batched",
    producerBatch: 1024,
    consumerBatch: 4096,
    honourBackpressure: true,
    ...overrides,
  };
}

/** Overrides from `-D key=value` (for what-if runs; recorded in each row's config). */
let configOverrides: Record<string, string> = {};

function sluiceConfig(
  bufferTimeoutMs: number,
  extra: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    "execution.buffer-timeout.interval": `${bufferTimeoutMs}ms`,
    ...extra,
    ...configOverrides,
  };
}

// --------------------------------------------------------------------------- row helpers

interface RowSpec {
  readonly caseId: number;
  readonly caseName: string;
  readonly system: string;
  readonly metric: string;
  readonly higherIsBetter: boolean;
  readonly values: readonly number[];
  readonly extra?: Record<string, unknown>;
  readonly note?: string;
}

function row(ctx: CaseContext, spec: RowSpec): ResultRow {
  const s = stats(spec.values);
  return {
    type: "result",
    runId: ctx.runId,
    case: spec.caseId,
    caseName: spec.caseName,
    system: spec.system,
    metric: spec.metric,
    higherIsBetter: spec.higherIsBetter,
    median: s.median,
    min: s.min,
    max: s.max,
    runs: s.runs,
    ...(spec.extra !== undefined ? { extra: spec.extra } : {}),
    ...(spec.note !== undefined ? { note: spec.note } : {}),
  };
}

function skipped(
  ctx: CaseContext,
  caseId: number,
  caseName: string,
  system: string,
  metric: string,
  note: string,
): ResultRow {
  return row(ctx, { caseId, caseName, system, metric, higherIsBetter: true, values: [], note });
}

/** Adds `baseline` and `ratio` (median / baseline median) to each row that names a baseline. */
function withRatios(
  rows: ResultRow[],
  baselineOf: (row: ResultRow) => string | undefined,
): ResultRow[] {
  return rows.map((r) => {
    const baseline = baselineOf(r);
    if (baseline === undefined || baseline === r.system || !Number.isFinite(r.median)) return r;
    const base = rows.find((b) => b.system === baseline);
    const ratio =
      base !== undefined && Number.isFinite(base.median) && base.median !== 0
        ? r.median / base.median
        : Number.NaN;
    return { ...r, baseline, ratio };
  });
}

function findRow(rows: readonly ResultRow[], system: string): ResultRow | undefined {
  return rows.find((r) => r.system === system);
}

function goal(
  ctx: CaseContext,
  caseId: number,
  text: string,
  measured: number | undefined,
  comparison: "≥" | "≤",
  target: number,
  unit: string,
  note?: string,
): GoalRow {
  const value = measured !== undefined && Number.isFinite(measured) ? measured : null;
  const met = value === null ? null : comparison === "≥" ? value >= target : value <= target;
  return {
    type: "goal",
    runId: ctx.runId,
    case: caseId,
    goal: text,
    measured: value,
    target,
    comparison,
    unit,
    met,
    ...(note !== undefined ? { note } : {}),
  };
}

function log(message: string): void {
  console.log(`  … ${message}`);
}

/** A throughput system of a case: its row name, implementation and settings. */
type SystemSpec = readonly [system: string, impl: Impl, params: ThroughputParams];

/**
 * Runs the throughput systems of a case with interleaved runs (see ThroughputSession): every
 * system is opened and warmed up, then run 1 of each, run 2 of each, ... Returns one row per
 * system, records/s or GB/s (payload bytes).
 */
async function throughputRows(
  ctx: CaseContext,
  caseId: number,
  caseName: string,
  allSpecs: readonly SystemSpec[],
  metric: "records/s" | "GB/s",
): Promise<ResultRow[]> {
  const o = ctx.options;
  const specs = allSpecs.filter(([system]) => selected(o, system));
  const sessions = new Map<string, ThroughputSession>();
  const failures = new Map<string, string>();
  try {
    for (const [system, impl, params] of specs) {
      if (impl === "sluice-ws" && ctx.wsUnavailable !== undefined) {
        failures.set(system, `not run: ${ctx.wsUnavailable}`);
        continue;
      }
      log(`case ${caseId} ${system}: start + warm-up`);
      try {
        const session = await ThroughputSession.open(o, system, impl, params);
        sessions.set(system, session);
        await session.run(o.warmupMs, false);
      } catch (error) {
        failures.set(system, `failed: ${firstLine(error)}`);
        await sessions.get(system)?.close();
        sessions.delete(system);
      }
    }
    for (let run = 1; run <= o.runs; run++) {
      log(`case ${caseId} run ${run}/${o.runs} of ${sessions.size} systems`);
      for (const [system, session] of [...sessions]) {
        try {
          await session.run(o.durationMs, true);
        } catch (error) {
          failures.set(system, `failed in run ${run}: ${firstLine(error)}`);
          await session.close();
          sessions.delete(system);
        }
      }
    }
    return specs.map(([system, impl, params]) => {
      const session = sessions.get(system);
      const failure = failures.get(system);
      if (session === undefined) {
        return skipped(ctx, caseId, caseName, system, metric, failure ?? "not run");
      }
      return sessionRow(ctx, caseId, caseName, session, impl, params, metric);
    });
  } finally {
    for (const session of sessions.values()) await session.close();
  }
}

function sessionRow(
  ctx: CaseContext,
  caseId: number,
  caseName: string,
  session: ThroughputSession,
  impl: Impl,
  params: ThroughputParams,
  metric: "records/s" | "GB/s",
): ResultRow {
  const runs = session.runs;
  const values = runs.map((r) => (metric === "GB/s" ? r.bytesPerSecond / 1e9 : r.recordsPerSecond));
  const last = runs[runs.length - 1];
  return row(ctx, {
    caseId,
    caseName,
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
      ...(last !== undefined
        ? { lastRun: { producer: last.produce.extra, consumer: last.drain.extra } }
        : {}),
    },
    ...(session.problems.length > 0 ? { note: `INVALID: ${session.problems.join("; ")}` } : {}),
  });
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return (text.split("\n").find((l) => l.trim() !== "") ?? text).slice(0, 300);
}

// -------------------------------------------------------------------------------- case 0

const case0: CaseDefinition = {
  id: 0,
  name: "core: serialize+deserialize vs memcpy; in-process 4 local channels (100 B records)",
  async run(ctx) {
    const name = this.name;
    const o = ctx.options;
    log("case 0 core (memcpy, serde, in-process) in one child");
    const child = new Child("core", profileArgs(o, "core", "core"), 0);
    let result: CoreResult;
    try {
      result = await child.request<CoreResult>(
        "core",
        { recordSize: 100, durationMs: o.durationMs, warmupMs: o.warmupMs, runs: o.runs },
        (o.durationMs * 7 + o.warmupMs * 7) * (o.runs + 1) + 60_000,
      );
    } catch (error) {
      const note = `failed: ${firstLine(error)}`;
      return {
        rows: [
          skipped(ctx, 0, name, "memcpy 32 KiB", "records/s", note),
          skipped(ctx, 0, name, "core serde", "records/s", note),
          skipped(ctx, 0, name, "in-process 4 ch", "records/s", note),
          skipped(ctx, 0, name, "in-process 1 ch", "records/s", note),
          ...READER_MODES.map((mode) =>
            skipped(ctx, 0, name, `reader: ${mode}`, "records/s", note),
          ),
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
        row(ctx, {
          caseId: 0,
          caseName: name,
          system: "memcpy 32 KiB",
          metric: "records/s",
          higherIsBetter: true,
          values: result.memcpyBytesPerSecond.map((b) => b / framed),
          extra: {
            GBps: median(result.memcpyBytesPerSecond) / 1e9,
            note: "32 KiB Buffer.set loop; records/s = bytes/s ÷ 104 (a framed 100-byte record)",
          },
        }),
        row(ctx, {
          caseId: 0,
          caseName: name,
          system: "core serde",
          metric: "records/s",
          higherIsBetter: true,
          values: result.serdeRecordsPerSecond,
          extra: { GBps: (median(result.serdeRecordsPerSecond) * framed) / 1e9 },
          ...(note !== undefined ? { note } : {}),
        }),
        row(ctx, {
          caseId: 0,
          caseName: name,
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
        row(ctx, {
          caseId: 0,
          caseName: name,
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
          row(ctx, {
            caseId: 0,
            caseName: name,
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
          : r.system === "in-process 4 ch" || r.system === "in-process 1 ch"
            ? "core serde"
            : r.system === "reader: reusing" || r.system === "reader: view"
              ? "reader: allocating"
              : undefined,
    );
    const goals = [
      goal(
        ctx,
        0,
        "in-process 4 channels ≥ 80% of core serde",
        findRow(rows, "in-process 4 ch")?.ratio,
        "≥",
        0.8,
        "× core serde",
      ),
    ];
    return { rows, goals };
  },
};

// -------------------------------------------------------------------------------- case 1

const GRPC_RAISED_WINDOW = 8 * 1024 * 1024;
/** Case 1's Sluice TCP with the Prometheus reporter on in both processes, scraped every second. */
const METRICS_EXPORTED = "sluice-tcp metrics exported";
const METRICS_PORT_KEY = "metrics.reporter.prom.port";
/** Case 1's Sluice TCP measured a second time, for the noise of the metrics comparison. */
const TCP_REPEAT = "sluice-tcp (repeat)";

const case1: CaseDefinition = {
  id: 1,
  name: "100 B records, keyed over 4 channels, buffer timeout 100 ms, two processes",
  async run(ctx) {
    const name = this.name;
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
    ];
    const rows = await throughputRows(ctx, 1, name, systems, "records/s");
    const withRatio = withRatios(rows, () => "raw net batched");
    const tcp = findRow(withRatio, "sluice-tcp");
    const tcpExported = findRow(withRatio, METRICS_EXPORTED);
    const tcpRepeat = findRow(withRatio, TCP_REPEAT);
    const grpc = findRow(withRatio, "grpc-js");
    const grpcRaised = findRow(withRatio, "grpc-js 8 MiB window");
    const goals = [
      goal(ctx, 1, "Sluice TCP ≥ 50% of hand-batched raw net", tcp?.ratio, "≥", 0.5, "× baseline"),
      goal(
        ctx,
        1,
        "Sluice TCP with metrics exported (Prometheus, scraped every 1 s) ≥ 90% of Sluice TCP (mean of its two rows)",
        tcp !== undefined && tcpExported !== undefined && tcpRepeat !== undefined
          ? tcpExported.median / ((tcp.median + tcpRepeat.median) / 2)
          : undefined,
        "≥",
        0.9,
        "×",
        tcp !== undefined && tcpRepeat !== undefined
          ? `noise: the repeat of Sluice TCP measured ${(tcpRepeat.median / tcp.median).toFixed(2)}× the first`
          : undefined,
      ),
      goal(
        ctx,
        1,
        "Sluice TCP ≥ 50× grpc-js one message per record (default window)",
        tcp !== undefined && grpc !== undefined ? tcp.median / grpc.median : undefined,
        "≥",
        50,
        "×",
        grpcRaised !== undefined && tcp !== undefined
          ? `vs raised window: ${(tcp.median / grpcRaised.median).toFixed(1)}×`
          : undefined,
      ),
    ];
    return { rows: withRatio, goals };
  },
};

// -------------------------------------------------------------------------------- case 2

const case2: CaseDefinition = {
  id: 2,
  name: "Flink's shape: 12 B records (int64 + length), round-robin, one producer process, Sluice TCP",
  async run(ctx) {
    const name = this.name;
    const specs: SystemSpec[] = [];
    for (const [channels, flushMs] of [
      [100, 100],
      [100, 1],
      [1000, 100],
      [1000, 1],
    ] as const) {
      // Flink's harness sizes each side to max(2048, writers × channels × 4) buffers.
      const network = `${Math.max(2048, channels * 4) * 32}kb`;
      const params = baseParams({
        recordSize: 8,
        recordKind: "int64",
        channels,
        selector: "rebalance",
        bufferTimeoutMs: flushMs,
        config: sluiceConfig(flushMs, networkMemory(network)),
        producerBatch: 4096,
        consumerBatch: 16384,
      });
      specs.push([`sluice-tcp ${channels} ch ${flushMs} ms`, "sluice-tcp", params]);
    }
    const rows = await throughputRows(ctx, 2, name, specs, "records/s");
    const withRatio = withRatios(rows, () => "sluice-tcp 100 ch 100 ms");
    const r100 = findRow(withRatio, "sluice-tcp 100 ch 100 ms");
    const r1000 = findRow(withRatio, "sluice-tcp 1000 ch 100 ms");
    const r1000f = findRow(withRatio, "sluice-tcp 1000 ch 1 ms");
    const r100f = findRow(withRatio, "sluice-tcp 100 ch 1 ms");
    const goals = [
      goal(
        ctx,
        2,
        "≥ 10 M records/s from one producer process (100 ch, 100 ms)",
        r100?.median,
        "≥",
        10e6,
        "records/s",
      ),
      goal(
        ctx,
        2,
        "1000 channels ≥ 80% of 100 channels (100 ms flush)",
        r1000 !== undefined && r100 !== undefined ? r1000.median / r100.median : undefined,
        "≥",
        0.8,
        "×",
        r1000f !== undefined && r100f !== undefined
          ? `1 ms flush: ${(r1000f.median / r100f.median).toFixed(2)}×`
          : undefined,
      ),
    ];
    return { rows: withRatio, goals };
  },
};

// -------------------------------------------------------------------------------- case 3

const case3: CaseDefinition = {
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
    const rows = await throughputRows(
      ctx,
      3,
      name,
      [
        ["raw net", "net", raw],
        ["raw ws", "ws", raw],
        ["sluice-tcp", "sluice-tcp", sluice],
        ["sluice-ws", "sluice-ws", sluice],
        ["libp2p-yamux", "yamux", raw],
      ],
      "GB/s",
    );
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
        goal(
          ctx,
          3,
          "Sluice TCP ≥ 80% of raw net GB/s",
          findRow(withRatio, "sluice-tcp")?.ratio,
          "≥",
          0.8,
          "× raw net",
        ),
        goal(
          ctx,
          3,
          "Sluice WS ≥ 70% of raw ws GB/s",
          findRow(withRatio, "sluice-ws")?.ratio,
          "≥",
          0.7,
          "× raw ws",
          ctx.wsUnavailable,
        ),
      ],
    };
  },
};

// -------------------------------------------------------------------------------- case 4

const case4: CaseDefinition = {
  id: 4,
  name: "latency: ping-pong of one 100 B record, buffer timeout 0 (RTT µs)",
  async run(ctx) {
    const name = this.name;
    const o = ctx.options;
    const perRun = o.full ? 5000 : 1000;
    const warmup = o.full ? 2000 : 500;
    const params = { recordSize: 100, config: sluiceConfig(0) };
    const rows: ResultRow[] = [];
    for (const [system, impl] of [
      ["raw net", "net"],
      ["sluice-tcp", "sluice-tcp"],
      ["sluice-ws", "sluice-ws"],
      ["raw ws", "ws"],
      ["grpc-js", "grpc"],
    ] as const) {
      if (!selected(o, system)) continue;
      if (impl === "sluice-ws" && ctx.wsUnavailable !== undefined) {
        rows.push(skipped(ctx, 4, name, system, "p50 RTT µs", `not run: ${ctx.wsUnavailable}`));
        continue;
      }
      log(`case 4 ${system}`);
      try {
        const batches = await runLatency(o, system, impl, params, warmup, perRun, o.runs);
        const per = batches.map((b) => Float64Array.from(b).sort());
        const p = (q: number) => per.map((s) => quantile(s, q));
        rows.push({
          ...row(ctx, {
            caseId: 4,
            caseName: name,
            system,
            metric: "p50 RTT µs",
            higherIsBetter: false,
            values: p(0.5),
            extra: {
              p99: median(p(0.99)),
              p999: median(p(0.999)),
              mean: median(per.map((s) => s.reduce((a, v) => a + v, 0) / s.length)),
              pingsPerRun: perRun,
              warmupPings: warmup,
            },
          }),
        });
      } catch (error) {
        rows.push(skipped(ctx, 4, name, system, "p50 RTT µs", `failed: ${firstLine(error)}`));
      }
    }
    const withRatio = withRatios(rows, () => "raw net");
    return {
      rows: withRatio,
      goals: [
        goal(
          ctx,
          4,
          "Sluice TCP p50 RTT ≤ 1.5× raw net",
          findRow(withRatio, "sluice-tcp")?.ratio,
          "≤",
          1.5,
          "× raw net",
        ),
      ],
    };
  },
};

// -------------------------------------------------------------------------------- case 5

/** When backpressure is ignored, the producer stops queueing at this many bytes (safety). */
const QUEUE_CAP_BYTES = 1024 * 1024 * 1024;

const case5: CaseDefinition = {
  id: 5,
  name: "slow consumer (≈1 MB/s): peak RSS growth of each process",
  async run(ctx) {
    const name = this.name;
    const o = ctx.options;
    const durationMs = o.full ? 10_000 : 3_000;
    const runs = o.full ? 2 : 1;
    const rate = 1_000_000;
    const limitMB = DEFAULT_NETWORK_MEMORY_MB + 16;
    // The goal is relative to the network memory: pin it.
    const config = sluiceConfig(100, networkMemory(`${DEFAULT_NETWORK_MEMORY_MB}mb`));
    const rows: ResultRow[] = [];
    const systems: [string, Impl, ThroughputParams][] = [
      ["sluice-tcp", "sluice-tcp", baseParams({ config, consumerBytesPerSecond: rate })],
      ["sluice-ws", "sluice-ws", baseParams({ config, consumerBytesPerSecond: rate })],
      [
        "raw net, no backpressure",
        "net",
        baseParams({
          consumerBytesPerSecond: rate,
          honourBackpressure: false,
          queuedCapBytes: QUEUE_CAP_BYTES,
        }),
      ],
      [
        "raw ws, no backpressure",
        "ws",
        baseParams({
          consumerBytesPerSecond: rate,
          honourBackpressure: false,
          queuedCapBytes: QUEUE_CAP_BYTES,
        }),
      ],
    ];
    for (const [system, impl, params] of systems) {
      if (impl === "sluice-ws" && ctx.wsUnavailable !== undefined) {
        rows.push(
          skipped(
            ctx,
            5,
            name,
            `${system} producer`,
            "RSS growth MiB",
            `not run: ${ctx.wsUnavailable}`,
          ),
        );
        rows.push(
          skipped(
            ctx,
            5,
            name,
            `${system} consumer`,
            "RSS growth MiB",
            `not run: ${ctx.wsUnavailable}`,
          ),
        );
        continue;
      }
      log(`case 5 ${system} (${durationMs / 1000} s × ${runs})`);
      const producer: number[] = [];
      const consumer: number[] = [];
      const rates: number[] = [];
      const extras: Record<string, unknown>[] = [];
      let failure: string | undefined;
      for (let run = 0; run < runs; run++) {
        try {
          const result = await runSlowConsumer(o, system, impl, params, durationMs);
          producer.push(result.producer.growthMB as number);
          consumer.push(result.consumer.growthMB as number);
          rates.push(result.consumed?.bytesPerSecond ?? Number.NaN);
          extras.push({
            producer: result.producer,
            consumer: result.consumer,
            produced: result.produce.extra,
          });
        } catch (error) {
          failure = `failed: ${firstLine(error)}`;
        }
      }
      const common = {
        consumerMBps: median(rates) / MB,
        durationS: durationMs / 1000,
        ...(impl.startsWith("sluice")
          ? { networkMemoryMB: DEFAULT_NETWORK_MEMORY_MB, goalMB: limitMB }
          : { queueCapMB: QUEUE_CAP_BYTES / 2 ** 20 }),
        runs: extras,
      };
      for (const [side, values] of [
        ["producer", producer],
        ["consumer", consumer],
      ] as const) {
        rows.push(
          row(ctx, {
            caseId: 5,
            caseName: name,
            system: `${system} ${side}`,
            metric: "RSS growth MiB",
            higherIsBetter: false,
            values,
            extra: common,
            ...(failure !== undefined ? { note: failure } : {}),
          }),
        );
      }
    }
    const goals: GoalRow[] = [];
    for (const system of ["sluice-tcp", "sluice-ws"]) {
      const worst = Math.max(
        findRow(rows, `${system} producer`)?.max ?? Number.NaN,
        findRow(rows, `${system} consumer`)?.max ?? Number.NaN,
      );
      goals.push(
        goal(
          ctx,
          5,
          `${system}: RSS growth of each process ≤ network memory (${DEFAULT_NETWORK_MEMORY_MB} MiB) + 16 MiB`,
          worst,
          "≤",
          limitMB,
          "MiB",
          system === "sluice-ws" ? ctx.wsUnavailable : undefined,
        ),
      );
    }
    return { rows, goals };
  },
};

// -------------------------------------------------------------------------------- case 6

const case6: CaseDefinition = {
  id: 6,
  name: "buffer-timeout sweep: 100 B records, keyed over 4 channels, Sluice TCP",
  async run(ctx) {
    const name = this.name;
    const rows = await throughputRows(
      ctx,
      6,
      name,
      [0, 1, 5, 100].map(
        (timeout): SystemSpec => [
          `sluice-tcp ${timeout} ms`,
          "sluice-tcp",
          baseParams({ bufferTimeoutMs: timeout, config: sluiceConfig(timeout) }),
        ],
      ),
      "records/s",
    );
    const withRatio = withRatios(rows, () => "sluice-tcp 100 ms");
    return {
      rows: withRatio,
      goals: [
        goal(
          ctx,
          6,
          "1 ms ≥ 75% of 100 ms",
          findRow(withRatio, "sluice-tcp 1 ms")?.ratio,
          "≥",
          0.75,
          "× 100 ms",
        ),
      ],
    };
  },
};

// -------------------------------------------------------------------------------- case 7

/**
 * Throw-away PEM files for mutual TLS, made with the openssl CLI (as the TLS tests do): one CA
 * and one certificate that both sides present.
 */
function makeTlsMaterial(): { config: Record<string, unknown>; remove(): void } {
  const dir = mkdtempSync(path.join(tmpdir(), "sluice-bench-tls-"));
  const openssl = (args: string[]) =>
    execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "ca.key"]);
  openssl([
    "req",
    "-x509",
    "-new",
    "-key",
    "ca.key",
    "-sha256",
    "-days",
    "2",
    "-subj",
    "/CN=bench-ca",
    "-out",
    "ca.crt",
  ]);
  openssl(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", "worker.key"]);
  openssl(["req", "-new", "-key", "worker.key", "-subj", "/CN=worker", "-out", "worker.csr"]);
  openssl([
    "x509",
    "-req",
    "-in",
    "worker.csr",
    "-CA",
    "ca.crt",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-sha256",
    "-out",
    "worker.crt",
  ]);
  return {
    config: {
      "security.ssl.internal.enabled": "true",
      "security.ssl.internal.key": path.join(dir, "worker.key"),
      "security.ssl.internal.cert": path.join(dir, "worker.crt"),
      "security.ssl.internal.ca": path.join(dir, "ca.crt"),
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const case7: CaseDefinition = {
  id: 7,
  name: "TLS on the data port: 100 B keyed records over 4 channels, Sluice TCP and WS, plaintext vs mutual TLS",
  async run(ctx) {
    const name = this.name;
    const tls = makeTlsMaterial();
    try {
      const small = (extra: Record<string, unknown>) =>
        baseParams({ config: sluiceConfig(100, extra) });
      const rows = await throughputRows(
        ctx,
        7,
        name,
        [
          ["sluice-tcp 100 B", "sluice-tcp", small({})],
          ["sluice-tcp+tls 100 B", "sluice-tcp", small(tls.config)],
          ["sluice-ws 100 B", "sluice-ws", small({})],
          ["sluice-wss 100 B", "sluice-ws", small(tls.config)],
        ],
        "records/s",
      );
      const withRatio = withRatios(rows, (row) =>
        row.system.replace("+tls", "").replace("wss", "ws"),
      );
      const ratio = (system: string) => findRow(withRatio, system)?.ratio;
      return {
        rows: withRatio,
        goals: [
          goal(
            ctx,
            7,
            "Sluice TCP with TLS ≥ 40% of plaintext (100 B records)",
            ratio("sluice-tcp+tls 100 B"),
            "≥",
            0.4,
            "× plaintext",
          ),
          goal(
            ctx,
            7,
            "Sluice WS with wss ≥ 40% of plaintext (100 B records)",
            ratio("sluice-wss 100 B"),
            "≥",
            0.4,
            "× plaintext",
          ),
        ],
      };
    } finally {
      tls.remove();
    }
  },
};

// -------------------------------------------------------------------------------- case 8

/** Network memory of the batch case's writer: its data is 4× this. */
const BATCH_NETWORK_MEMORY_MB = 32;
/** The read memory of blocking partitions (`taskmanager.memory.framework.off-heap.batch-shuffle.size`'s default). */
const BATCH_READ_MEMORY_MB = 64;

const case8: CaseDefinition = {
  id: 8,
  name: "batch shuffle: 100 B records, BLOCKING partition written then read, two processes",
  async run(ctx) {
    const name = this.name;
    const o = ctx.options;
    const recordSize = 100;
    // 4× the network memory in framed bytes (each record with its 4-byte length).
    const records = Math.ceil((4 * BATCH_NETWORK_MEMORY_MB * 2 ** 20) / (recordSize + 4));
    const config = (compress: boolean) =>
      sluiceConfig(100, {
        ...networkMemory(`${BATCH_NETWORK_MEMORY_MB}mb`),
        "taskmanager.memory.framework.off-heap.batch-shuffle.size": `${BATCH_READ_MEMORY_MB}mb`,
        "taskmanager.network.batch-shuffle.compression.enabled": compress,
      });
    const params = (compress: boolean): BatchParams => ({
      recordSize,
      records,
      channels: 4,
      config: config(compress),
      producerBatch: 1024,
      consumerBatch: 4096,
    });
    const systems: [string, Impl, BatchParams][] = [
      ["fs streams", "fs-streams", params(false)],
      // The same bytes as the baseline: compression off (the bench's records compress very well).
      ["sluice-tcp blocking", "sluice-tcp-blocking", params(false)],
      ["sluice-tcp blocking LZ4", "sluice-tcp-blocking", params(true)],
    ].filter(([system]) => selected(o, system as string)) as [string, Impl, BatchParams][];
    const sessions = new Map<string, BatchSession>();
    const failures = new Map<string, string>();
    const memory = new Map<string, Record<string, number>>();
    try {
      for (const [system, impl, p] of systems) {
        log(`case 8 ${system}: start + warm-up (${formatCount(records)} records)`);
        try {
          const session = await BatchSession.open(o, system, impl, p);
          sessions.set(system, session);
          await session.run(false);
        } catch (error) {
          failures.set(system, `failed: ${firstLine(error)}`);
          await sessions.get(system)?.close();
          sessions.delete(system);
        }
      }
      for (let run = 1; run <= o.runs; run++) {
        log(`case 8 run ${run}/${o.runs} of ${sessions.size} systems`);
        for (const [system, session] of [...sessions]) {
          try {
            await session.run(true);
          } catch (error) {
            failures.set(system, `failed in run ${run}: ${firstLine(error)}`);
            await session.close();
            sessions.delete(system);
          }
        }
      }
      for (const [system, session] of sessions) memory.set(system, await session.writerMemory());
    } finally {
      for (const session of sessions.values()) await session.close();
    }
    const rows: ResultRow[] = systems.map(([system, impl, p]) => {
      const session = sessions.get(system);
      if (session === undefined) {
        return skipped(ctx, 8, name, system, "GB/s", failures.get(system) ?? "not run");
      }
      const runs: readonly BatchRun[] = session.runs;
      const last = runs[runs.length - 1];
      return row(ctx, {
        caseId: 8,
        caseName: name,
        system,
        metric: "GB/s",
        higherIsBetter: true,
        values: runs.map((r) => r.bytesPerSecond / 1e9),
        extra: {
          recordSize,
          records,
          dataMiB: (records * (recordSize + 4)) / 2 ** 20,
          writeMs: median(runs.map((r) => r.writeMs)),
          readMs: median(runs.map((r) => r.readMs)),
          writerMemory: memory.get(system),
          ...(impl === "fs-streams"
            ? {}
            : {
                channels: p.channels,
                networkMemoryMB: BATCH_NETWORK_MEMORY_MB,
                batchReadMemoryMB: BATCH_READ_MEMORY_MB,
                config: p.config,
              }),
          ...(last !== undefined
            ? { lastRun: { writer: last.write.extra, reader: last.read.extra } }
            : {}),
        },
        ...(session.problems.length > 0 ? { note: `INVALID: ${session.problems.join("; ")}` } : {}),
      });
    });
    rows.push(...(await lz4Rows(ctx, name)));
    const withRatio = withRatios(rows, (r) =>
      r.metric === "LZ4 GB/s" ? "lz4-napi direct" : "fs streams",
    );
    const limitMB = BATCH_NETWORK_MEMORY_MB + BATCH_READ_MEMORY_MB + 16;
    const growth = Math.max(
      ...["sluice-tcp blocking", "sluice-tcp blocking LZ4"].map(
        (system) => memory.get(system)?.growthMB ?? Number.NaN,
      ),
    );
    const goals = [
      goal(
        ctx,
        8,
        "Sluice TCP blocking write+read ≥ 60% of plain fs streams",
        findRow(withRatio, "sluice-tcp blocking")?.ratio,
        "≥",
        0.6,
        "× baseline",
      ),
      goal(
        ctx,
        8,
        `Sluice writer's RSS growth ≤ network memory (${BATCH_NETWORK_MEMORY_MB} MiB) + batch-read memory (${BATCH_READ_MEMORY_MB} MiB) + 16 MiB at 4× data`,
        growth,
        "≤",
        limitMB,
        "MiB",
      ),
    ];
    return { rows: withRatio, goals };
  },
};

/** LZ4 over the demo's words: Sluice's BufferCompressor beside lz4-napi called directly. */
async function lz4Rows(ctx: CaseContext, name: string): Promise<ResultRow[]> {
  const o = ctx.options;
  const systems = ["lz4 via BufferCompressor", "lz4-napi direct"];
  log("case 8 LZ4 on the demo's words, in one child");
  try {
    const result = await runLz4(o, {
      words: 1_000_000,
      durationMs: o.durationMs,
      warmupMs: o.warmupMs,
      runs: o.runs,
    });
    const extra = { inputMB: result.inputBytes / MB, buffers: result.buffers, bufferKiB: 32 };
    return [
      row(ctx, {
        caseId: 8,
        caseName: name,
        system: systems[0] as string,
        metric: "LZ4 GB/s",
        higherIsBetter: true,
        values: result.sluice.bytesPerSecond.map((b) => b / 1e9),
        extra: { ...extra, compressionRatio: result.sluice.ratio },
      }),
      row(ctx, {
        caseId: 8,
        caseName: name,
        system: systems[1] as string,
        metric: "LZ4 GB/s",
        higherIsBetter: true,
        values: result.direct.bytesPerSecond.map((b) => b / 1e9),
        extra: { ...extra, compressionRatio: result.direct.ratio },
      }),
    ];
  } catch (error) {
    const note = `failed: ${firstLine(error)}`;
    return systems.map((system) => skipped(ctx, 8, name, system, "LZ4 GB/s", note));
  }
}

function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

// -------------------------------------------------------------------------------- case 9

const case9: CaseDefinition = {
  id: 9,
  name: "checkpoints under back-pressure (sink at 10% of the source): aligned, unaligned, aligned + debloating",
  async run(ctx) {
    const name = this.name;
    const o = ctx.options;
    const durationMs = o.full ? 12_000 : 5_000;
    const args = {
      durationMs,
      warmupMs: 1_500,
      producerRate: 100_000,
      consumerRate: 10_000,
      recordSize: 100,
    };
    log(`case 9 checkpoints (3 modes × ${durationMs / 1000} s) in one child`);
    const child = new Child("checkpoints", profileArgs(o, "checkpoints", "checkpoints"), 0);
    let results: CheckpointModeResult[];
    try {
      results = await child.request<CheckpointModeResult[]>(
        "checkpoints",
        args,
        durationMs * 3 + 120_000,
      );
    } catch (error) {
      const note = `failed: ${firstLine(error)}`;
      return {
        rows: ["aligned", "unaligned", "aligned+debloat"].map((system) =>
          skipped(ctx, 9, name, system, "checkpoint ms", note),
        ),
        goals: [],
      };
    } finally {
      await child.close();
    }
    const checkpointRows = withRatios(
      results.map((r) =>
        row(ctx, {
          caseId: 9,
          caseName: name,
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
        .filter((r) => r.mode !== "unaligned")
        .map((r) =>
          row(ctx, {
            caseId: 9,
            caseName: name,
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
      goal(
        ctx,
        9,
        "unaligned checkpoint duration ≤ 10% of aligned",
        ratio("unaligned"),
        "≤",
        0.1,
        "×",
      ),
      goal(
        ctx,
        9,
        "aligned + debloating checkpoint duration ≤ 25% of aligned",
        ratio("aligned+debloat"),
        "≤",
        0.25,
        "×",
      ),
      goal(
        ctx,
        9,
        "in-flight bytes with debloating ≤ 25% of without",
        ratio("aligned+debloat in-flight"),
        "≤",
        0.25,
        "×",
      ),
    ];
    return { rows, goals };
  },
};

/** Sets the `-D` overrides applied to every Sluice environment of the run. */
export function setConfigOverrides(overrides: Record<string, string>): void {
  configOverrides = { ...overrides };
}

export const CASES: readonly CaseDefinition[] = [
  case0,
  case1,
  case2,
  case3,
  case4,
  case5,
  case6,
  case7,
  case8,
  case9,
];
