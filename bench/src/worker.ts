/**
 * The child process of every benchmark: forked by the harness, it creates one role of one system
 * and answers the parent's requests over IPC. It exits when asked, and by itself when the parent
 * goes away (the IPC channel closes), so no child outlives a bench run.
 */
import type { BatchParams, BatchReader, BatchWriter } from "./batch-roles.js";
import type { CheckpointArgs } from "./cases/checkpoint-bench.js";
import type { CoreArgs } from "./cases/core-bench.js";
import type { DatastreamArgs } from "./cases/datastream-bench.js";
import type { FreeListRunArgs } from "./cases/free-list-bench.js";
import type { Lz4Args } from "./cases/lz4-bench.js";
import type { PartitionWorkArgs } from "./cases/partition-work.js";
import type { RelayArgs, RelayPeerArgs } from "./cases/relay-bench.js";
import type { RingRunArgs } from "./cases/shared-ring-bench.js";
import type { ChannelRunArgs, KeyedRunArgs, SlotsStartArgs } from "./cases/slots-bench.js";
import type { WakeUpRunArgs } from "./cases/wake-up-bench.js";
import type {
  LatencyParams,
  LatencyPeer,
  ThroughputConsumer,
  ThroughputParams,
  ThroughputProducer,
} from "./roles.js";
import { throttleStats } from "./throttle.js";

/** Which implementation a child runs. */
export type Impl =
  | "sluice-tcp"
  | "sluice-ws"
  | "net"
  | "ws"
  | "grpc"
  | "yamux"
  | "zeromq"
  | "sluice-tcp-blocking"
  | "sluice-remote-blocking"
  | "fs-streams"
  | "fs-store";
export type Role = "producer" | "consumer" | "pinger" | "ponger";

type Instance = ThroughputProducer | ThroughputConsumer | LatencyPeer | BatchWriter | BatchReader;

interface Request {
  readonly id: number;
  readonly op: string;
  readonly args: unknown;
}

let instance: Instance | undefined;

/**
 * Creates the role. Each system's module is imported only in the children that run it: a raw
 * baseline's process never loads Sluice (or grpc-js), as it would not in a user's program —
 * loading Sluice's packages was measured to slow a raw `net` reader in the same process (see
 * docs/benchmarks.md), so sharing one module graph would handicap the baselines.
 */
async function create(
  impl: Impl,
  role: Role,
  params: ThroughputParams & LatencyParams & BatchParams,
): Promise<Instance> {
  switch (impl) {
    case "sluice-tcp-blocking":
    case "sluice-remote-blocking": {
      const m = await import("./systems/sluice-batch.js");
      const transport = impl === "sluice-tcp-blocking" ? "tcp" : "remote";
      return role === "producer"
        ? new m.SluiceBatchWriter(transport, params)
        : new m.SluiceBatchReader(transport, params);
    }
    case "fs-streams": {
      const m = await import("./systems/fs-streams.js");
      return role === "producer" ? new m.FsBatchWriter(params) : new m.FsBatchReader(params);
    }
    case "fs-store": {
      const m = await import("./systems/fs-store.js");
      return role === "producer"
        ? new m.FsStoreBatchWriter(params)
        : new m.FsStoreBatchReader(params);
    }
    case "sluice-tcp":
    case "sluice-ws": {
      const m = await import("./systems/sluice-roles.js");
      const transport = impl === "sluice-tcp" ? "tcp" : "ws";
      if (role === "producer") return new m.SluiceThroughputProducer(transport, params);
      if (role === "consumer") return new m.SluiceThroughputConsumer(transport, params);
      return new m.SluiceLatencyPeer(transport, role, params);
    }
    case "net": {
      const m = await import("./systems/raw-net.js");
      if (role === "producer") return new m.NetThroughputProducer(params);
      if (role === "consumer") return new m.NetThroughputConsumer(params);
      return new m.NetLatencyPeer(role, params);
    }
    case "ws": {
      const m = await import("./systems/raw-ws.js");
      if (role === "producer") return new m.WsThroughputProducer(params);
      if (role === "consumer") return new m.WsThroughputConsumer(params);
      return new m.WsLatencyPeer(role, params);
    }
    case "grpc": {
      const m = await import("./systems/grpc.js");
      if (role === "producer") return new m.GrpcThroughputProducer(params);
      if (role === "consumer") return new m.GrpcThroughputConsumer(params);
      return new m.GrpcLatencyPeer(role, params);
    }
    case "yamux": {
      const m = await import("./systems/yamux.js");
      if (role === "producer") return new m.YamuxThroughputProducer(params);
      if (role === "consumer") return new m.YamuxThroughputConsumer(params);
      throw new Error("libp2p-yamux runs only in throughput cases");
    }
    case "zeromq": {
      const m = await import("./systems/zeromq.js");
      if (role === "producer") return new m.ZeromqThroughputProducer(params);
      if (role === "consumer") return new m.ZeromqThroughputConsumer(params);
      throw new Error("zeromq runs only in throughput cases");
    }
  }
}

// ----------------------------------------------------------------- memory (RSS) sampling

const MB = 1024 * 1024;
let sampler: NodeJS.Timeout | undefined;
let baselineRss = 0;
let peakRss = 0;

function memStart(): { baselineMB: number } {
  globalThis.gc?.();
  baselineRss = process.memoryUsage.rss();
  peakRss = baselineRss;
  clearInterval(sampler);
  sampler = setInterval(() => {
    const rss = process.memoryUsage.rss();
    if (rss > peakRss) peakRss = rss;
  }, 10);
  return { baselineMB: baselineRss / MB };
}

function memStop(): Record<string, number> {
  clearInterval(sampler);
  sampler = undefined;
  const rss = process.memoryUsage.rss();
  if (rss > peakRss) peakRss = rss;
  // maxRSS is the kernel's high-water mark (KiB): it catches peaks between two samples.
  const maxRss = process.resourceUsage().maxRSS * 1024;
  const peak = Math.max(peakRss, maxRss);
  const usage = process.memoryUsage();
  return {
    baselineMB: baselineRss / MB,
    peakMB: peak / MB,
    growthMB: (peak - baselineRss) / MB,
    sampledPeakMB: peakRss / MB,
    heapUsedMB: usage.heapUsed / MB,
    externalMB: usage.external / MB,
    arrayBuffersMB: usage.arrayBuffers / MB,
  };
}

// ------------------------------------------------------------------------------ dispatch

async function handle(request: Request): Promise<unknown> {
  const args = request.args as Record<string, unknown>;
  switch (request.op) {
    case "init": {
      instance = await create(
        args.impl as Impl,
        args.role as Role,
        args.params as ThroughputParams & LatencyParams & BatchParams,
      );
      return null;
    }
    case "call": {
      const method = args.method as string;
      const target = instance as unknown as Record<string, (a: unknown) => Promise<unknown>>;
      const fn = target?.[method];
      if (typeof fn !== "function") throw new Error(`no method '${method}' on this role`);
      if (method === "produce" || method === "drain") {
        return await withProcessUsage(() => fn.call(instance, args.args) as Promise<RunResult>);
      }
      return await fn.call(instance, args.args);
    }
    case "memStart":
      return memStart();
    case "memStop":
      return memStop();
    case "core": {
      const { runCoreBenchmark } = await import("./cases/core-bench.js");
      return await runCoreBenchmark(args as unknown as CoreArgs);
    }
    case "checkpoints": {
      const { runCheckpointBenchmark } = await import("./cases/checkpoint-bench.js");
      return await runCheckpointBenchmark(args as unknown as CheckpointArgs);
    }
    case "datastream": {
      const { runDatastreamBenchmark } = await import("./cases/datastream-bench.js");
      return await runDatastreamBenchmark(args as unknown as DatastreamArgs);
    }
    case "lz4": {
      const { runLz4Benchmark } = await import("./cases/lz4-bench.js");
      return runLz4Benchmark(args as unknown as Lz4Args);
    }
    case "slotsStart": {
      const { startSlots } = await import("./cases/slots-bench.js");
      return await startSlots(args as unknown as SlotsStartArgs);
    }
    case "slotsKeyed": {
      const { keyedRun } = await import("./cases/slots-bench.js");
      return await keyedRun(args as unknown as KeyedRunArgs);
    }
    case "slotsChannel": {
      const { channelRun } = await import("./cases/slots-bench.js");
      return await channelRun(args as unknown as ChannelRunArgs);
    }
    case "slotsMemory": {
      const { slotsMemory } = await import("./cases/slots-bench.js");
      return slotsMemory();
    }
    case "slotsStop": {
      const { stopSlots } = await import("./cases/slots-bench.js");
      await stopSlots();
      return null;
    }
    case "ring": {
      const { ringRun } = await import("./cases/shared-ring-bench.js");
      return await ringRun(args as unknown as RingRunArgs);
    }
    case "partitionWork": {
      const { partitionWork } = await import("./cases/partition-work.js");
      const work = args as unknown as PartitionWorkArgs;
      return work.records / ((await partitionWork(work)) / 1000);
    }
    case "partitionScaling": {
      const { partitionScalingRun } = await import("./cases/partition-work-thread.js");
      const { threads, work } = args as unknown as { threads: number; work: PartitionWorkArgs };
      return await partitionScalingRun(threads, work);
    }
    case "wakeUp": {
      const { wakeUpRun } = await import("./cases/wake-up-bench.js");
      return await wakeUpRun(args as unknown as WakeUpRunArgs);
    }
    case "freeList": {
      const { freeListRun } = await import("./cases/free-list-bench.js");
      return await freeListRun(args as unknown as FreeListRunArgs);
    }
    case "relaySend": {
      const { relaySend } = await import("./cases/relay-bench.js");
      return await relaySend(args as unknown as RelayArgs);
    }
    case "relayReceive": {
      const { relayReceive } = await import("./cases/relay-bench.js");
      return await relayReceive(args as unknown as RelayArgs);
    }
    case "relayPeerListen": {
      const { relayPeerListen } = await import("./cases/relay-bench.js");
      return await relayPeerListen(args as unknown as RelayPeerArgs);
    }
    case "relayPeerResult": {
      const { relayPeerResult } = await import("./cases/relay-bench.js");
      return await relayPeerResult();
    }
    case "throttleStats":
      return throttleStats();
    case "wsAvailability": {
      const { wsAvailability } = await import("./systems/sluice.js");
      return (await wsAvailability()) ?? null;
    }
    case "exit":
      await shutdown(0);
      return null;
    default:
      throw new Error(`unknown op '${request.op}'`);
  }
}

let shuttingDown = false;
async function shutdown(code: number): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  const hard = setTimeout(() => process.exit(code), 3_000);
  hard.unref();
  try {
    await instance?.close();
  } catch (error) {
    // Exiting anyway, but a failed close (a leak, a stuck connection) must show in the output.
    console.error(`bench worker: close failed: ${(error as Error)?.stack ?? String(error)}`);
  }
  // process.exit would skip writing a --cpu-prof profile only on a hard kill; a normal exit writes it.
  process.exit(code);
}

process.on("message", (request: Request) => {
  if (request.op === "exit") {
    void shutdown(0);
    return;
  }
  handle(request).then(
    (result) => process.send?.({ id: request.id, ok: true, result }),
    (error: unknown) =>
      process.send?.({
        id: request.id,
        ok: false,
        error: error instanceof Error ? (error.stack ?? error.message) : String(error),
      }),
  );
});

// The parent went away: never linger.
process.on("disconnect", () => {
  void shutdown(0);
});

type RunResult = { extra?: Record<string, unknown> };

/**
 * Runs one side of a throughput run and adds to its `extra` what the process spent on it: how
 * busy its event loop was, and its CPU time in user space (JavaScript, libuv) and in the kernel
 * (system calls and, on loopback, the TCP stack's work for both ends of the packets it sends).
 * The same for every system, so that rows compare where each side's time went.
 */
async function withProcessUsage(run: () => Promise<RunResult>): Promise<RunResult> {
  const loop = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const result = await run();
  const { user, system } = process.cpuUsage(cpu);
  const usage = {
    eventLoopBusy: performance.eventLoopUtilization(loop).utilization,
    userMs: user / 1000,
    systemMs: system / 1000,
  };
  return { ...result, extra: { ...result.extra, usage } };
}
