/**
 * Case 13: a task manager with 2 slots on 2 cores, its slots on its one event loop
 * (`taskmanager.task-slots.mode: single-loop`) against each slot on a thread of its own
 * (`threaded`) and against slot 0 on the main thread and slot 1 on a thread (`threaded` with
 * `taskmanager.task-slots.main-thread-slot`: one isolate fewer), each in a child process of its
 * own, not pinned to a CPU (a threaded task manager needs both). Measured in the same run,
 * interleaved:
 *
 * - a keyed job, two sources → HASH → two counters, 100-byte records: records/s at the counters;
 * - the local channel between the two slots (segment-sized records written into the partition,
 *   copied out of the gate): GB/s, against a raw SharedArrayBuffer ring between two threads of a
 *   third child (one copy in, one copy out, blocking waits);
 * - the peak RSS of each task manager's process, and its RSS once started, before any job (what two
 *   slot threads cost before they run anything);
 * - the free list of the network memory: a segment taken and given back, on one thread's array
 *   (single-loop) and on the lock-free list the threads share, alone and contended;
 * - the ceiling: Sluice's per-record work without any channel (`partition-work-thread.ts`: the
 *   keyed job's records through a writer, a partition on shared segments and a deserializer) on
 *   one thread, and on two threads at once: what two cores give this work on this machine;
 * - where a threaded task manager's network I/O lives: 32 KiB buffers sent to (and received
 *   from) another child over TCP by a slot thread on its own connection, or through the main
 *   thread (handed over through a SharedArrayBuffer ring).
 * - what bounds the local channel: how long one thread takes to wake another that waits, with
 *   the ring's blocking `Atomics.wait` and with the slot threads' `Atomics.waitAsync`
 *   (`wake-up-bench.ts`), and the ring again with only as many slots as a channel may hold
 *   buffers by default (Flink's `taskmanager.network.memory.max-buffers-per-channel`, 10): a side
 *   that runs out waits, and is woken, once per window.
 */
import { Child, median } from "../harness.js";
import { type CaseDefinition, firstLine, log } from "./case-definition.js";
import type { FreeListResult } from "./free-list-bench.js";
import type { RelayMode } from "./relay-bench.js";
import { findRow, withRatios } from "./result-rows.js";
import type { SlotsMode, SlotsRunResult } from "./slots-bench.js";
import { sluiceConfig } from "./sluice-params.js";
import type { WakeUpMode } from "./wake-up-bench.js";

const SEGMENT_SIZE = 32 * 1024;
const KEYED = "keyed job";
const CHANNEL = "local channel";
const RING = "SharedArrayBuffer ring";
/** Slots of the ring the goal compares with (1 MiB of 32 KiB chunks). */
const RING_SLOTS = 32;
/** A local channel's window by default: Flink's `max-buffers-per-channel`. */
const DEFAULT_WINDOW = 10;
const NARROW_RING = `${RING}, ${DEFAULT_WINDOW} slots (a channel's default window)`;
const MAIN_THREAD_SLOT: SlotsMode = "threaded, slot on the main thread";
const MODES: readonly SlotsMode[] = ["single-loop", "threaded", MAIN_THREAD_SLOT];
const IDLE_RSS = "RSS after start, no job yet";

const WAKE_UPS: readonly WakeUpMode[] = ["Atomics.wait", "Atomics.waitAsync"];
const wakeUpSystem = (mode: WakeUpMode) => `wake-up of a waiting thread, ${mode}`;

const SCALING = ["1 thread", "2 threads at once"] as const;
const scalingSystem = (threads: (typeof SCALING)[number]) =>
  `Sluice's per-record work, no channel, ${threads}`;

const RELAY_MODES: readonly RelayMode[] = ["slot thread", "main thread"];
const FREE_LISTS = {
  arrayNs: "free list: one thread's array",
  sharedNs: "free list: shared, lock-free",
  sharedContendedNs: "free list: shared, another thread taking too",
} as const;

const system = (what: string, mode: string) => `${what}, ${mode}`;

/** The row each row of the case is compared with; undefined for a baseline. */
function baselineOf(row: string): string | undefined {
  if (row.startsWith(KEYED)) return system(KEYED, "single-loop");
  if (row === scalingSystem("2 threads at once")) return scalingSystem("1 thread");
  if (row.startsWith(CHANNEL) || row === NARROW_RING) return RING;
  if (row === wakeUpSystem("Atomics.waitAsync")) return wakeUpSystem("Atomics.wait");
  if (row.startsWith("peak RSS")) return system("peak RSS", "single-loop");
  if (row.startsWith(IDLE_RSS)) return system(IDLE_RSS, "single-loop");
  if (row.startsWith("free list: shared")) return FREE_LISTS.arrayNs;
  if (row.startsWith("send, ")) return system("send", "slot thread");
  if (row.startsWith("receive, ")) return system("receive", "slot thread");
  return undefined;
}

export const case13: CaseDefinition = {
  id: 13,
  name: "Task slots on threads: one task manager with 2 slots on 2 cores, single-loop vs threaded, with and without slot 0 on the main thread",
  async run(report) {
    const o = report.options;
    const recordsPerSource = o.full ? 4_000_000 : 1_000_000;
    const channelRecords = o.full ? 80_000 : 20_000;
    const keyed = new Map<SlotsMode, number[]>(MODES.map((mode) => [mode, []]));
    const channel = new Map<SlotsMode, number[]>(MODES.map((mode) => [mode, []]));
    const ring: number[] = [];
    const narrowRing: number[] = [];
    const wakeUps = new Map<WakeUpMode, number[]>(WAKE_UPS.map((mode) => [mode, []]));
    const freeList = new Map<keyof FreeListResult, number[]>(
      (Object.keys(FREE_LISTS) as (keyof FreeListResult)[]).map((key) => [key, []]),
    );
    const relay = new Map<string, number[]>();
    const scaling = new Map<string, number[]>(SCALING.map((threads) => [threads, []]));
    const rss = new Map<SlotsMode, { startMB: number; idleMB: number; peakMB: number }>();
    const problems: string[] = [];
    const children = new Map<SlotsMode, Child>();
    const ringChild = new Child("ring");

    const relayChild = new Child("relay");
    const relayPeer = new Child("relay-peer");
    try {
      for (const mode of MODES) {
        const child = new Child(`slots-${mode}`);
        children.set(mode, child);
        await child.request("slotsStart", { mode, config: sluiceConfig(100) }, 60_000);
      }

      // A warm-up run of each, then the measured runs, interleaved.
      for (let run = 0; run <= o.runs; run++) {
        const measured = run > 0;
        log(`case 13 run ${run}/${o.runs}${measured ? "" : " (warm-up)"}`);
        for (const mode of MODES) {
          const child = children.get(mode) as Child;
          const k = await child.request<SlotsRunResult>(
            "slotsKeyed",
            { recordsPerSource },
            600_000,
          );
          const c = await child.request<SlotsRunResult>(
            "slotsChannel",
            { records: channelRecords },
            600_000,
          );
          problems.push(...k.checks, ...c.checks);
          if (measured) {
            keyed.get(mode)?.push(k.perSecond);
            channel.get(mode)?.push(c.bytesPerSecond / 1e9);
          }
        }
        for (const mode of WAKE_UPS) {
          const micros = await ringChild.request<number>(
            "wakeUp",
            { mode, durationMs: Math.min(o.durationMs, 1_000) },
            60_000,
          );
          if (measured) wakeUps.get(mode)?.push(micros);
        }
        const r = await ringChild.request<{ bytesPerSecond: number }>(
          "ring",
          { durationMs: o.durationMs, chunkBytes: SEGMENT_SIZE, slots: RING_SLOTS },
          o.durationMs + 60_000,
        );
        if (measured) ring.push(r.bytesPerSecond / 1e9);
        const n = await ringChild.request<{ bytesPerSecond: number }>(
          "ring",
          { durationMs: o.durationMs, chunkBytes: SEGMENT_SIZE, slots: DEFAULT_WINDOW },
          o.durationMs + 60_000,
        );
        if (measured) narrowRing.push(n.bytesPerSecond / 1e9);
        for (const [index, threads] of SCALING.entries()) {
          const perSecond = await ringChild.request<number>(
            "partitionScaling",
            {
              threads: index + 1,
              work: {
                records: recordsPerSource,
                size: 100,
                channels: 2,
                shared: true,
                bytes: true,
              },
            },
            600_000,
          );
          if (measured) scaling.get(threads)?.push(perSecond);
        }
        const f = await ringChild.request<FreeListResult>(
          "freeList",
          { durationMs: Math.min(o.durationMs, 1_000) },
          60_000,
        );
        for (const mode of RELAY_MODES) {
          for (const direction of ["send", "receive"] as const) {
            const port = await relayPeer.request<number>(
              "relayPeerListen",
              { role: direction === "send" ? "sink" : "source", chunkBytes: SEGMENT_SIZE },
              30_000,
            );
            const args = { mode, port, durationMs: o.durationMs, chunkBytes: SEGMENT_SIZE };
            let gbps: number;
            if (direction === "send") {
              await relayChild.request("relaySend", args, o.durationMs + 60_000);
              gbps = await relayPeer.request<number>("relayPeerResult", {}, 60_000);
            } else {
              gbps = await relayChild.request<number>("relayReceive", args, o.durationMs + 60_000);
              await relayPeer.request("relayPeerResult", {}, 60_000);
            }
            const key = system(direction, mode);
            if (measured) relay.set(key, [...(relay.get(key) ?? []), gbps]);
          }
        }
        if (measured) {
          for (const key of freeList.keys()) freeList.get(key)?.push(f[key]);
        }
      }
      for (const mode of MODES) {
        rss.set(mode, await (children.get(mode) as Child).request("slotsMemory", {}, 30_000));
      }
    } catch (error) {
      problems.push(`failed: ${firstLine(error)}`);
    } finally {
      for (const child of children.values()) {
        await child.request("slotsStop", {}, 60_000).catch(() => undefined);
        await child.close();
      }
      await ringChild.close();
      await relayChild.close();
      await relayPeer.close();
    }
    const note = problems.length > 0 ? `INVALID: ${problems.slice(0, 3).join("; ")}` : undefined;
    const rows = withRatios(
      [
        ...MODES.map((mode) =>
          report.row({
            system: system(KEYED, mode),
            metric: "records/s",
            higherIsBetter: true,
            values: keyed.get(mode) ?? [],
            extra: { recordsPerSource, recordBytes: 100 },
            ...(note !== undefined ? { note } : {}),
          }),
        ),
        report.row({
          system: RING,
          metric: "GB/s",
          higherIsBetter: true,
          values: ring,
          extra: { chunkBytes: SEGMENT_SIZE, slots: RING_SLOTS },
        }),
        report.row({
          system: NARROW_RING,
          metric: "GB/s",
          higherIsBetter: true,
          values: narrowRing,
          extra: { chunkBytes: SEGMENT_SIZE, slots: DEFAULT_WINDOW },
        }),
        ...SCALING.map((threads) =>
          report.row({
            system: scalingSystem(threads),
            metric: "records/s",
            higherIsBetter: true,
            values: scaling.get(threads) ?? [],
            extra: { records: recordsPerSource, recordBytes: 100 },
          }),
        ),
        ...MODES.map((mode) =>
          report.row({
            system: system(CHANNEL, mode),
            metric: "GB/s",
            higherIsBetter: true,
            values: channel.get(mode) ?? [],
            extra: { records: channelRecords, recordBytes: SEGMENT_SIZE },
            ...(note !== undefined ? { note } : {}),
          }),
        ),
        ...WAKE_UPS.map((mode) =>
          report.row({
            system: wakeUpSystem(mode),
            metric: "µs",
            higherIsBetter: false,
            values: wakeUps.get(mode) ?? [],
          }),
        ),
        ...(Object.keys(FREE_LISTS) as (keyof FreeListResult)[]).map((key) =>
          report.row({
            system: FREE_LISTS[key],
            metric: "ns per take+give",
            higherIsBetter: false,
            values: freeList.get(key) ?? [],
          }),
        ),
        ...(["send", "receive"] as const).flatMap((direction) =>
          RELAY_MODES.map((mode) =>
            report.row({
              system: system(direction, mode),
              metric: "GB/s",
              higherIsBetter: true,
              values: relay.get(system(direction, mode)) ?? [],
              extra: { chunkBytes: SEGMENT_SIZE },
            }),
          ),
        ),
        ...MODES.map((mode) =>
          report.row({
            system: system("peak RSS", mode),
            metric: "MiB",
            higherIsBetter: false,
            values: rss.has(mode) ? [(rss.get(mode) as { peakMB: number }).peakMB] : [],
            extra: { startMB: rss.get(mode)?.startMB },
          }),
        ),
        // What the peak is measured against: the same process once the task manager is up,
        // before any job; in threaded mode that is its slot threads' isolates with their code.
        ...MODES.map((mode) =>
          report.row({
            system: system(IDLE_RSS, mode),
            metric: "MiB",
            higherIsBetter: false,
            values: rss.has(mode) ? [(rss.get(mode) as { idleMB: number }).idleMB] : [],
          }),
        ),
      ],
      (row) => baselineOf(row.system),
    );
    const threadedKeyed = findRow(rows, system(KEYED, "threaded"));
    const threadedChannel = findRow(rows, system(CHANNEL, "threaded"));
    const twoThreads = findRow(rows, scalingSystem("2 threads at once"));
    const asyncWakeUp = findRow(rows, wakeUpSystem("Atomics.waitAsync"));
    const single = rss.get("single-loop");
    const threaded = rss.get("threaded");
    const mainThreadSlot = rss.get(MAIN_THREAD_SLOT);
    const goals = [
      report.goal({
        text: "keyed job with 2 slots on threads ≥ 1.7× the same task manager on one event loop (records/s)",
        measured: threadedKeyed?.ratio,
        comparison: "≥",
        target: 1.7,
        unit: "×",
        note:
          threadedKeyed === undefined
            ? undefined
            : `${(threadedKeyed.median / 1e6).toFixed(2)} M against ${(median(keyed.get("single-loop") ?? []) / 1e6).toFixed(2)} M records/s; the same per-record work on two threads with no channel scaled ${twoThreads?.ratio?.toFixed(2) ?? "?"}× on this machine`,
      }),
      report.goal({
        text: "local channel between slot threads ≥ 0.8× a raw SharedArrayBuffer ring between two threads (GB/s)",
        measured: threadedChannel?.ratio,
        comparison: "≥",
        target: 0.8,
        unit: "×",
        note:
          threadedChannel === undefined
            ? undefined
            : `${threadedChannel.median.toFixed(2)} against ${median(ring).toFixed(2)} GB/s; ` +
              `the ring with ${DEFAULT_WINDOW} slots ${median(narrowRing).toFixed(2)} GB/s; ` +
              `a wake-up takes ${asyncWakeUp?.median.toFixed(1) ?? "?"} µs with Atomics.waitAsync, ` +
              `${median(wakeUps.get("Atomics.wait") ?? []).toFixed(1)} µs with Atomics.wait`,
      }),
      report.goal({
        text: "peak RSS of the task manager with 2 threaded slots ≤ single-loop + 32 MiB",
        measured:
          single !== undefined && threaded !== undefined
            ? threaded.peakMB - single.peakMB
            : undefined,
        comparison: "≤",
        target: 32,
        unit: "MiB",
        note:
          single !== undefined && threaded !== undefined
            ? `${threaded.peakMB.toFixed(1)} against ${single.peakMB.toFixed(1)} MiB (${threaded.startMB.toFixed(1)} and ${single.startMB.toFixed(1)} MiB before the task manager started); ` +
              `+${(threaded.idleMB - single.idleMB).toFixed(1)} MiB already once both were up, before any job (the slot threads' isolates and code)` +
              (mainThreadSlot === undefined
                ? ""
                : `; with slot 0 on the main thread (one slot thread): +${(mainThreadSlot.peakMB - single.peakMB).toFixed(1)} MiB at the peak, +${(mainThreadSlot.idleMB - single.idleMB).toFixed(1)} MiB before any job`)
            : undefined,
      }),
    ];
    return { rows, goals };
  },
};
