/**
 * Case 12, run inside one child process: what operator chaining saves, and what the typed API
 * costs against the hand-written JobGraph of the same job. Every job runs in this process on a
 * TaskExecutor and a JobDeployer of the in-process (local) plugin; its sink, a callback in this
 * process, times the records from the first to the last it received.
 *
 * - A map chain of 3 operators after a source and before a sink (numbers, declared float64),
 *   chained into one task, and the same job with chaining disabled (5 tasks connected FORWARD,
 *   each edge serializing its records into network buffers).
 * - A keyed count (words over 1,000 keys, 2 source and 2 counter subtasks, HASH by word): the
 *   typed API's `keyBy(...).process(...)` with a `ValueState` per word and a chained sink,
 *   against the hand-written JobGraph of it (a source invokable and a counter invokable that
 *   counts in a Map and calls the sink inline).
 */
import { setImmediate as yieldToEventLoop } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { StreamExecutionEnvironment, Types, ValueStateDescriptor } from "@sluice/datastream";
import {
  Configuration,
  JobDeployer,
  JobGraph,
  PollStatus,
  type Task,
  TaskExecutor,
} from "@sluice/runtime";

export interface DatastreamArgs {
  /** Records per map-chain run. */
  readonly chainRecords: number;
  /** Records per keyed-job run. */
  readonly keyedRecords: number;
  /** Measured runs per system, after one warm-up run each; interleaved. */
  readonly runs: number;
}

export type DatastreamSystem =
  | "map chain ×3, chained"
  | "map chain ×3, unchained"
  | "keyed count, typed API"
  | "keyed count, hand-written JobGraph";

export const DATASTREAM_SYSTEMS: readonly DatastreamSystem[] = [
  "map chain ×3, chained",
  "map chain ×3, unchained",
  "keyed count, typed API",
  "keyed count, hand-written JobGraph",
];

export interface DatastreamResult {
  /** Records per second at the sink, per measured run. */
  readonly recordsPerSecond: Record<DatastreamSystem, number[]>;
  /** The vertices of each system's job (chaining as it ran). */
  readonly vertices: Record<DatastreamSystem, string[]>;
  readonly checks: string[];
}

const LOADER = { applicationDirs: [fileURLToPath(new URL("../..", import.meta.url))] };
const KEYS = 1_000;
const WORDS = Array.from({ length: KEYS }, (_, i) => `word-${i}`);
const COUNT = new ValueStateDescriptor("count", Types.NUMBER);

function configuration(): Configuration {
  return new Configuration({
    "shuffle-service-factory.class": "@sluice/network#LocalShuffleServiceFactory",
    "taskmanager.memory.network.min": "64mb",
  });
}

/**
 * What a sink saw: records, a checksum, and when the first and the last of the `expected`
 * arrived (the clock is read for those two only, so that it costs the records nothing).
 */
class SinkMeter {
  count = 0;
  sum = 0;
  first = 0;
  last = 0;

  constructor(private readonly expected: number) {}

  record(value: number): void {
    this.count++;
    this.sum += value;
    if (this.count === 1) this.first = performance.now();
    if (this.count === this.expected) this.last = performance.now();
  }

  get recordsPerSecond(): number {
    return this.count > 1 && this.last > this.first
      ? ((this.count - 1) * 1000) / (this.last - this.first)
      : 0;
  }
}

interface Job {
  readonly vertices: string[];
  run(): Promise<void>;
}

function mapChain(records: number, chained: boolean, meter: SinkMeter): Job {
  const env = StreamExecutionEnvironment.create({ name: `map chain ${chained}` });
  if (!chained) env.disableOperatorChaining();
  env
    .fromGenerator(records, (i) => i)
    .returns(Types.NUMBER)
    .map((n) => n + 1)
    .returns(Types.NUMBER)
    .map((n) => n * 2)
    .returns(Types.NUMBER)
    .map((n) => n - 1)
    .returns(Types.NUMBER)
    .addSink((n) => meter.record(n));
  return {
    vertices: env.compile().graph.vertices.map((v) => v.name),
    run: async () => {
      const result = await env.execute(configuration(), { loader: LOADER });
      if (result.status !== "FINISHED") throw new Error(`${result.status}: ${result.error}`);
    },
  };
}

function typedKeyedCount(records: number, meter: SinkMeter): Job {
  const env = StreamExecutionEnvironment.create({ name: "keyed count", parallelism: 2 });
  env
    .fromGenerator(records, (i) => WORDS[i % KEYS] as string)
    .returns(Types.STRING)
    .keyBy((word) => word, { keyType: Types.STRING })
    .process<number>((_word, ctx) => {
      const count = ctx.getState(COUNT);
      const n = (count.value() ?? 0) + 1;
      count.update(n);
      ctx.emit(n);
    })
    .returns(Types.NUMBER)
    .addSink((n) => meter.record(n));
  return {
    vertices: env.compile().graph.vertices.map((v) => v.name),
    run: async () => {
      const result = await env.execute(configuration(), { loader: LOADER });
      if (result.status !== "FINISHED") throw new Error(`${result.status}: ${result.error}`);
    },
  };
}

function handWrittenKeyedCount(records: number, meter: SinkMeter): Job {
  const words = async (task: Task) => {
    const writer = task.writer<string>();
    let emitted = 0;
    for (let i = task.subtaskIndex; i < records; i += task.numberOfSubtasks) {
      if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
      else if (emitted % 256 === 0) await task.yieldToMailbox();
      writer.emit(WORDS[i % KEYS] as string);
      emitted++;
    }
  };
  const count = async (task: Task) => {
    const counts = new Map<string, number>();
    const onRecord = (word: string) => {
      const n = (counts.get(word) ?? 0) + 1;
      counts.set(word, n);
      meter.record(n);
    };
    const reader = task.reader<string>();
    for (;;) {
      const status = reader.pollRecords(onRecord, 256);
      if (status === PollStatus.END_OF_INPUT) return;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else await yieldToEventLoop();
    }
  };
  const graph = () => {
    const g = new JobGraph("keyed count, hand-written");
    const source = g.addVertex({ name: "Words", parallelism: 2, invokable: "words" });
    const counter = g.addVertex({ name: "Count", parallelism: 2, invokable: "count" });
    g.connect(source, counter, {
      partitioner: { name: "HASH", keySelector: "value" },
      serializer: "string",
    });
    return g;
  };
  return {
    vertices: graph().vertices.map((v) => v.name),
    run: async () => {
      const config = configuration();
      const executor = await TaskExecutor.start(config, {
        invokables: { words, count },
        localCommunicationOnly: true,
        loader: LOADER,
      });
      try {
        const deployer = await JobDeployer.start(config, { loader: LOADER });
        try {
          const execution = await deployer.deploy(graph(), () => executor);
          const result = await execution.terminated;
          if (result.status !== "FINISHED") throw new Error(`${result.status}: ${result.error}`);
        } finally {
          await deployer.close();
        }
      } finally {
        await executor.close();
      }
    },
  };
}

function jobOf(system: DatastreamSystem, args: DatastreamArgs, meter: SinkMeter): Job {
  switch (system) {
    case "map chain ×3, chained":
      return mapChain(args.chainRecords, true, meter);
    case "map chain ×3, unchained":
      return mapChain(args.chainRecords, false, meter);
    case "keyed count, typed API":
      return typedKeyedCount(args.keyedRecords, meter);
    case "keyed count, hand-written JobGraph":
      return handWrittenKeyedCount(args.keyedRecords, meter);
  }
}

/** What the sink must have seen: every record once (count and checksum). */
function check(
  system: DatastreamSystem,
  args: DatastreamArgs,
  meter: SinkMeter,
): string | undefined {
  if (system.startsWith("map chain")) {
    const n = args.chainRecords;
    // Each n becomes (n + 1) * 2 - 1 = 2n + 1.
    const sum = n * (n - 1) + n;
    if (meter.count !== n || meter.sum !== sum) {
      return `${system}: ${meter.count} records summing to ${meter.sum}, expected ${n} summing to ${sum}`;
    }
    return undefined;
  }
  const n = args.keyedRecords;
  let sum = 0;
  for (let key = 0; key < KEYS; key++) {
    const c = key < n ? Math.floor((n - 1 - key) / KEYS) + 1 : 0;
    sum += (c * (c + 1)) / 2;
  }
  if (meter.count !== n || meter.sum !== sum) {
    return `${system}: ${meter.count} running counts summing to ${meter.sum}, expected ${n} summing to ${sum}`;
  }
  return undefined;
}

/** Runs every system once to warm up, then `runs` times, interleaved. */
export async function runDatastreamBenchmark(args: DatastreamArgs): Promise<DatastreamResult> {
  const recordsPerSecond = Object.fromEntries(
    DATASTREAM_SYSTEMS.map((system) => [system, [] as number[]]),
  ) as Record<DatastreamSystem, number[]>;
  const vertices = {} as Record<DatastreamSystem, string[]>;
  const checks: string[] = [];
  for (let run = -1; run < args.runs; run++) {
    for (const system of DATASTREAM_SYSTEMS) {
      const meter = new SinkMeter(
        system.startsWith("map chain") ? args.chainRecords : args.keyedRecords,
      );
      const job = jobOf(system, args, meter);
      vertices[system] = job.vertices;
      await job.run();
      const problem = check(system, args, meter);
      if (problem !== undefined) checks.push(problem);
      if (run >= 0) recordsPerSecond[system].push(meter.recordsPerSecond);
    }
  }
  return { recordsPerSecond, vertices, checks };
}
