/**
 * Parent-side drivers: run one system of a case in its own pair of child processes and turn
 * what the children report into per-run numbers. Every child is closed (or killed) whatever
 * happens; a failing system becomes a row with a note, and the bench goes on.
 */
import { type BenchOptions, Child, profileArgs, withChildren } from "./harness.js";
import type {
  DrainResult,
  LatencyParams,
  PingResult,
  ProduceResult,
  ThroughputParams,
} from "./roles.js";
import type { Impl } from "./worker.js";

/** One measured throughput run. */
export interface ThroughputRun {
  readonly recordsPerSecond: number;
  readonly bytesPerSecond: number;
  readonly sent: number;
  readonly received: number;
  readonly valid: boolean;
  readonly produce: ProduceResult;
  readonly drain: DrainResult;
}

async function init(child: Child, impl: Impl, role: string, params: unknown): Promise<void> {
  await child.request("init", { impl, role, params }, 30_000);
}

function call<T>(child: Child, method: string, args: unknown, timeoutMs: number): Promise<T> {
  return child.request<T>("call", { method, args }, timeoutMs);
}

/** Turns one run's reports into a rate; records arriving after the first batch are timed. */
function toRun(
  params: ThroughputParams,
  produce: ProduceResult,
  drain: DrainResult,
): ThroughputRun {
  const timedOk = drain.timedMs > 20 && drain.timedRecords > 0;
  const recordsPerSecond = timedOk
    ? drain.timedRecords / (drain.timedMs / 1000)
    : drain.received / (produce.elapsedMs / 1000);
  const valid =
    produce.sent === drain.received &&
    (params.recordKind === "int64" || produce.keySum === drain.keySum);
  return {
    recordsPerSecond,
    bytesPerSecond: recordsPerSecond * params.recordSize,
    sent: produce.sent,
    received: drain.received,
    valid,
    produce,
    drain,
  };
}

/**
 * One throughput system of a case: its producer and consumer processes, kept alive between runs
 * so that the runs of all systems of a case can be interleaved (run 1 of every system, then run 2,
 * ...): on a shared, noisy machine a slow phase then hits every system instead of one.
 */
export class ThroughputSession {
  readonly problems: string[] = [];
  readonly runs: ThroughputRun[] = [];
  private closed = false;

  private constructor(
    readonly system: string,
    private readonly params: ThroughputParams,
    private readonly producer: Child,
    private readonly consumer: Child,
  ) {}

  static async open(
    options: BenchOptions,
    system: string,
    impl: Impl,
    params: ThroughputParams,
  ): Promise<ThroughputSession> {
    const producer = new Child(`${system}:producer`, profileArgs(options, system, "producer"), 0);
    const consumer = new Child(`${system}:consumer`, profileArgs(options, system, "consumer"), 1);
    const session = new ThroughputSession(system, params, producer, consumer);
    try {
      await Promise.all([
        init(producer, impl, "producer", params),
        init(consumer, impl, "consumer", params),
      ]);
    } catch (error) {
      await session.close();
      throw error;
    }
    return session;
  }

  /** One exchange of `durationMs`: a fresh endpoint, connection (or partition + gate) and stream. */
  async run(durationMs: number, measured: boolean): Promise<ThroughputRun> {
    const p = this.producer;
    const c = this.consumer;
    const limit = durationMs + 60_000;
    const endpoint = await call<unknown>(p, "prepare", null, 30_000);
    await call(c, "connect", endpoint, 30_000);
    const drained = call<DrainResult>(c, "drain", null, limit);
    // Awaited below, after produce: only keeps an early rejection from being "unhandled".
    drained.catch(() => {});
    const produced = await call<ProduceResult>(p, "produce", { durationMs }, limit);
    const drain = await drained;
    await Promise.all([call(p, "cleanup", null, 30_000), call(c, "cleanup", null, 30_000)]);
    const result = toRun(this.params, produced, drain);
    if (!result.valid) {
      this.problems.push(
        `${measured ? "a measured" : "the warm-up"} run sent ${result.sent} records but ${result.received} arrived (or key sums differ)`,
      );
    }
    if (measured) this.runs.push(result);
    return result;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([this.producer.close(), this.consumer.close()]);
  }
}

/** One memory-bounded run of case 5: RSS growth of both processes under a slow consumer. */
export interface MemoryRun {
  readonly producer: Record<string, number>;
  readonly consumer: Record<string, number>;
  readonly produce: ProduceResult;
  readonly consumed: { bytes: number; bytesPerSecond: number } | null;
}

export async function runSlowConsumer(
  options: BenchOptions,
  system: string,
  impl: Impl,
  params: ThroughputParams,
  durationMs: number,
): Promise<MemoryRun> {
  return withChildren(
    [`${system}:producer`, `${system}:consumer`],
    (name) => ["--expose-gc", ...profileArgs(options, system, name.split(":")[1] as string)],
    async ([producer, consumer]) => {
      const p = producer as Child;
      const c = consumer as Child;
      await Promise.all([init(p, impl, "producer", params), init(c, impl, "consumer", params)]);
      const endpoint = await call<unknown>(p, "prepare", null, 30_000);
      await call(c, "connect", endpoint, 30_000);
      // Baselines after the environments (pools allocated, not yet touched) and the connection exist.
      await Promise.all([p.request("memStart", null, 10_000), c.request("memStart", null, 10_000)]);
      // The consumer reads at its slow rate for the whole run; its drain is never awaited (a
      // producer that ignored backpressure queued far more than the run could ever read), so
      // it is expected to end in a rejection when the child is closed. A consumer that failed
      // earlier fails the memStop and consumed requests below.
      call<DrainResult>(c, "drain", null, durationMs + 120_000).catch(() => {});
      const produce = await call<ProduceResult>(p, "produce", { durationMs }, durationMs + 60_000);
      const [producerMem, consumerMem] = await Promise.all([
        p.request<Record<string, number>>("memStop", null, 10_000),
        c.request<Record<string, number>>("memStop", null, 10_000),
      ]);
      const consumed = await c.request<{ bytes: number; bytesPerSecond: number } | null>(
        "throttleStats",
        null,
        10_000,
      );
      // Nothing more to learn from these processes, and a queue of up to the cap to drop.
      p.kill();
      c.kill();
      return { producer: producerMem, consumer: consumerMem, produce, consumed };
    },
  );
}

/** Ping-pong: `warmup` pings discarded, then `runs` batches of `perRun` pings. */
export async function runLatency(
  options: BenchOptions,
  system: string,
  impl: Impl,
  params: LatencyParams,
  warmup: number,
  perRun: number,
  runs: number,
): Promise<number[][]> {
  return withChildren(
    [`${system}:pinger`, `${system}:ponger`],
    (name) => profileArgs(options, system, name.split(":")[1] as string),
    async ([pinger, ponger]) => {
      const a = pinger as Child;
      const b = ponger as Child;
      await Promise.all([init(a, impl, "pinger", params), init(b, impl, "ponger", params)]);
      const [endpointA, endpointB] = await Promise.all([
        call<unknown>(a, "prepare", null, 30_000),
        call<unknown>(b, "prepare", null, 30_000),
      ]);
      await Promise.all([
        call(b, "connect", endpointA, 30_000),
        call(a, "connect", endpointB, 30_000),
      ]);
      const served = call<{ echoed: number }>(b, "serve", null, 300_000);
      // Awaited below, after ping: only keeps an early rejection from being "unhandled".
      served.catch(() => {});
      const total = warmup + perRun * runs;
      const result = await call<PingResult>(a, "ping", { count: total }, 300_000);
      await served;
      const samples = result.samplesUs.slice(warmup);
      const batches: number[][] = [];
      for (let r = 0; r < runs; r++) batches.push(samples.slice(r * perRun, (r + 1) * perRun));
      return batches;
    },
  );
}
