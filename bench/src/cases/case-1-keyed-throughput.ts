/**
 * Case 1: 100 B keyed records over 4 channels between two processes — Sluice TCP and WS against
 * hand-batched raw net, per-record raw net/ws, grpc-js, libp2p-yamux and zeromq.js PUSH/PULL (one
 * message per record, and hand-batched); and the cost of exporting
 * the metrics to Prometheus. And what bounds Sluice here: its producer's own work, with no socket
 * and no consumer (the producer process is the busier of the two).
 */
import { Child, profileArgs, type ResultRow, selected } from "../harness.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import type { CaseReport } from "./case-report.js";
import { findRow, ratioToLimit } from "./result-rows.js";
import { baseParams, sluiceConfig } from "./sluice-params.js";
import { type SystemSpec, throughputRows } from "./throughput-rows.js";

const GRPC_RAISED_WINDOW = 8 * 1024 * 1024;
/** Case 1's Sluice TCP with the Prometheus reporter on in both processes, scraped every second. */
const METRICS_EXPORTED = "sluice-tcp metrics exported";
const METRICS_PORT_KEY = "metrics.reporter.prom.port";
/** Sluice's producer with nothing after its partition: what Sluice TCP is measured against. */
const PRODUCER_ALONE = "Sluice producer alone (no socket)";

/** Case 1's Sluice TCP measured a second time, for the noise of the metrics comparison. */
const TCP_REPEAT = "sluice-tcp (repeat)";

export const case1: CaseDefinition = {
  id: 1,
  name: "100 B records, keyed over 4 channels, buffer timeout 100 ms, two processes",
  async run(report) {
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
      ["zeromq per-record", "zeromq", baseParams({ batching: "per-record" })],
      ["zeromq batched", "zeromq", baseParams({ batching: "batched" })],
    ];
    const rows = await throughputRows(
      report,
      { metric: "records/s", baseline: () => "raw net batched" },
      systems,
    );
    rows.push(...(await producerAloneRows(report, rows)));
    const tcp = findRow(rows, "sluice-tcp");
    const tcpExported = findRow(rows, METRICS_EXPORTED);
    const tcpRepeat = findRow(rows, TCP_REPEAT);
    const grpc = findRow(rows, "grpc-js");
    const grpcRaised = findRow(rows, "grpc-js 8 MiB window");
    const goals = [
      report.goal({
        text: "Sluice TCP ≥ 65% of hand-batched raw net",
        measured: tcp?.ratio,
        comparison: "≥",
        target: 0.65,
        unit: "× baseline",
        note: ratioToLimit(rows, "sluice-tcp", PRODUCER_ALONE),
      }),
      report.goal({
        text: "Sluice TCP with metrics exported (Prometheus, scraped every 1 s) ≥ 90% of Sluice TCP (mean of its two rows)",
        measured:
          tcp !== undefined && tcpExported !== undefined && tcpRepeat !== undefined
            ? tcpExported.median / ((tcp.median + tcpRepeat.median) / 2)
            : undefined,
        comparison: "≥",
        target: 0.9,
        unit: "×",
        note:
          tcp !== undefined && tcpRepeat !== undefined
            ? `noise: the repeat of Sluice TCP measured ${(tcpRepeat.median / tcp.median).toFixed(2)}× the first`
            : undefined,
      }),
      report.goal({
        text: "Sluice TCP ≥ 50× grpc-js one message per record (default window)",
        measured: tcp !== undefined && grpc !== undefined ? tcp.median / grpc.median : undefined,
        comparison: "≥",
        target: 50,
        unit: "×",
        note:
          grpcRaised !== undefined && tcp !== undefined
            ? `vs raised window: ${(tcp.median / grpcRaised.median).toFixed(1)}×`
            : undefined,
      }),
    ];
    return { rows, goals };
  },
};

/**
 * The producer's work alone (`partition-work.ts` with its buffers recycled unread): the same
 * 100-byte keyed records through a RecordWriter into a partition of 4 subpartitions, in a child
 * pinned as the producers are. Sluice TCP's producer does this and its socket's
 * writes, so it cannot move records faster than this row.
 */
async function producerAloneRows(
  report: CaseReport,
  rows: readonly ResultRow[],
): Promise<ResultRow[]> {
  const o = report.options;
  if (!selected(o, PRODUCER_ALONE)) return [];
  log(`case 1 ${PRODUCER_ALONE}`);
  const child = new Child("producer-alone", profileArgs(o, PRODUCER_ALONE, "producer"), 0);
  const work = { records: o.full ? 4_000_000 : 1_000_000, size: 100, channels: 4, read: false };
  try {
    // In this child's main thread, whose compiled code the runs share: two warm-up runs (the
    // writer's path is still getting faster in the second), then the measured runs.
    const values: number[] = [];
    for (let run = -1; run <= o.runs; run++) {
      const perSecond = await child.request<number>("partitionWork", work, 120_000);
      if (run > 0) values.push(perSecond);
    }
    const row = report.row({
      system: PRODUCER_ALONE,
      metric: "records/s",
      higherIsBetter: true,
      values,
      extra: {
        ...work,
        note: "RecordWriter → partition, buffers recycled unread; no socket, no consumer",
      },
    });
    const raw = findRow(rows, "raw net batched");
    return [
      raw !== undefined && raw.median > 0
        ? { ...row, baseline: "raw net batched", ratio: row.median / raw.median }
        : row,
    ];
  } catch (error) {
    return [report.skipped(PRODUCER_ALONE, "records/s", `failed: ${firstLine(error)}`)];
  } finally {
    await child.close();
  }
}
