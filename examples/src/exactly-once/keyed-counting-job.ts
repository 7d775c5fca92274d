/**
 * A keyed, checkpointed counting job for the exactly-once tests: one producer emits the numbers
 * 0..n-1, hash-partitioned by `value % KEYS` to two counters, which count and sum every key's
 * numbers with the read API the job names; the producer emits through the writer path and runs
 * its checkpoint triggers at the mail point the job names. Both sides keep their state in checkpoints (the
 * producer its offset, a counter its per-key counts and sums), and a counter may fail on purpose
 * at a chosen point, so a restore from a checkpoint is exact only if every snapshot holds exactly
 * the records its task processed before the barrier.
 *
 * The code imports only the published packages: the tests run it from packed tarballs.
 */
import {
  JobGraph,
  PollStatus,
  type RecordReader,
  type Task,
  type TaskExecutorOptions,
} from "@sluice/runtime";

/** Distinct keys of the job. */
export const KEYS = 1_000;

/** Every way a task reads its input. */
export const READ_APIS = [
  "for await",
  "pollRecords",
  "pollRecordsInto",
  "pollRecordViews",
] as const;

/** One of {@link READ_APIS}. */
export type ReadApi = (typeof READ_APIS)[number];

/** Every way the producer emits: each record to its key's counter, a random one, or all. */
export const EMIT_PATHS = ["emit", "randomEmit", "broadcastEmit"] as const;

/** One of {@link EMIT_PATHS}. */
export type EmitPath = (typeof EMIT_PATHS)[number];

/**
 * Where the producer runs its mail (checkpoint triggers): in `task.yieldToMailbox()` every few
 * hundred records and while back-pressured, or in `task.processMail()` after every record.
 */
export const MAIL_POINTS = ["yieldToMailbox", "processMail"] as const;

/** One of {@link MAIL_POINTS}. */
export type MailPoint = (typeof MAIL_POINTS)[number];

/** A counter subtask fails in attempt `attempt` after it processed `afterRecords` in it. */
export interface InjectedFailure {
  readonly attempt: number;
  readonly subtask: number;
  readonly afterRecords: number;
}

/** What one run of the job is. */
export interface KeyedCountingJobSpec {
  /** Numbers the producer emits. */
  readonly records: number;
  /** How the counters read. */
  readonly readApi: ReadApi;
  /** How the producer emits. */
  readonly emitPath: EmitPath;
  /** Where the producer runs its checkpoint triggers. */
  readonly mailPoint: MailPoint;
  /** Unaligned (true) or aligned exactly-once checkpoints. */
  readonly unaligned: boolean;
  /** `execution.checkpointing.interval` in ms. */
  readonly checkpointIntervalMs: number;
  /** The producer waits a millisecond after every this many records, so the job lasts a while. */
  readonly pauseEvery: number;
  /**
   * Failures of counter tasks. Each happens only once its attempt acknowledged two checkpoints,
   * so that the restart restores from one rather than from the start.
   */
  readonly failures: readonly InjectedFailure[];
}

/** A counter's checkpointed state and its result: per key, how many numbers and their sum. */
export type CounterState = {
  readonly counts: number[];
  readonly sums: number[];
};

const PRODUCER = "Produce";
const COUNTER = "Count";
/** Counter subtasks. */
const COUNTERS = 2;
/** Records a poll loop takes per call before it yields to the event loop. */
const RECORDS_PER_POLL = 512;

/** The serializer of {@link Numbered} records, with `deserializeInto` for `pollRecordsInto`. */
type Serializer = NonNullable<TaskExecutorOptions["serializers"]>[string];

/** The record: a number, keyed by `value % KEYS`. */
interface Numbered {
  value: number;
}

const numbered: Serializer = {
  name: "numbered",
  serialize: (record: Numbered, out) => out.writeInt(record.value),
  deserialize: (input): Numbered => ({ value: input.readInt() }),
  deserializeInto: (reuse: Numbered, input) => {
    reuse.value = input.readInt();
    return reuse;
  },
};

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Emits `records` numbers from its offset on; its state is the offset. */
async function produce(task: Task): Promise<{ emitted: number }> {
  const records = task.configuration.records as number;
  const pauseEvery = task.configuration.pauseEvery as number;
  const emitPath = task.configuration.emitPath as EmitPath;
  const mailPoint = task.configuration.mailPoint as MailPoint;
  let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
  task.setCheckpointHandler({ snapshotState: () => ({ offset }) });
  const writer = task.writer<Numbered>();
  const record: Numbered = { value: 0 };
  while (offset < records) {
    // Mail (checkpoint triggers) runs only between two records: in yieldToMailbox, or in
    // processMail after each record.
    if (mailPoint === "yieldToMailbox") {
      if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
      else if (offset % pauseEvery === 0) await task.yieldToMailbox(delay(1));
    } else if (!writer.isAvailable()) await writer.getAvailableFuture();
    else if (offset % pauseEvery === 0) await delay(1);
    task.signal.throwIfAborted();
    record.value = offset;
    if (emitPath === "emit") writer.emit(record);
    else if (emitPath === "randomEmit") writer.randomEmit(record);
    else writer.broadcastEmit(record);
    offset++;
    if (mailPoint === "processMail") task.processMail();
  }
  return { emitted: offset };
}

/** Reads with `poll` until the input ends, awaiting only when nothing is available. */
async function pollToEnd(task: Task, reader: RecordReader<Numbered>, poll: () => PollStatus) {
  for (;;) {
    const status = poll();
    if (status === PollStatus.END_OF_INPUT) return;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else await new Promise((resolve) => setImmediate(resolve));
    task.signal.throwIfAborted();
  }
}

/** Counts and sums every key's numbers with the configured read API; its state is both. */
async function consume(task: Task): Promise<CounterState> {
  const readApi = task.configuration.readApi as ReadApi;
  const failures = task.configuration.failures as unknown as InjectedFailure[];
  const restored = task.restoredState as CounterState | undefined;
  const counts = restored?.counts ?? new Array<number>(KEYS).fill(0);
  const sums = restored?.sums ?? new Array<number>(KEYS).fill(0);
  task.setCheckpointHandler({ snapshotState: () => ({ counts, sums }) });
  const failure = failures.find(
    (f) => f.attempt === task.attemptNumber && f.subtask === task.subtaskIndex,
  );
  let processed = 0;
  /** The first checkpoint this attempt acknowledged. */
  let firstAcknowledged: bigint | undefined;
  const count = (value: number) => {
    const key = value % KEYS;
    counts[key] = (counts[key] as number) + 1;
    sums[key] = (sums[key] as number) + value;
    processed++;
    if (failure === undefined || processed < failure.afterRecords) return;
    // Only once this attempt acknowledged a second checkpoint: by then the first one has
    // almost always completed (every task acknowledged it), so the restart restores a
    // checkpoint instead of starting over, which would hide a snapshot that missed records.
    const acknowledged = task.lastCheckpoint?.checkpointId;
    firstAcknowledged ??= acknowledged;
    if (
      acknowledged !== undefined &&
      firstAcknowledged !== undefined &&
      acknowledged > firstAcknowledged
    ) {
      throw new Error(
        `${task.name}: injected failure after ${processed} records (checkpoint ${acknowledged} acknowledged)`,
      );
    }
  };
  const reader = task.reader<Numbered>();
  switch (readApi) {
    case "for await":
      for await (const record of reader) count(record.value);
      break;
    case "pollRecords":
      await pollToEnd(task, reader, () =>
        reader.pollRecords((record) => count(record.value), RECORDS_PER_POLL),
      );
      break;
    case "pollRecordsInto": {
      const reuse: Numbered = { value: 0 };
      await pollToEnd(task, reader, () =>
        reader.pollRecordsInto(reuse, (record) => count(record.value), RECORDS_PER_POLL),
      );
      break;
    }
    case "pollRecordViews":
      await pollToEnd(task, reader, () =>
        reader.pollRecordViews((input) => count(input.readInt()), RECORDS_PER_POLL),
      );
      break;
  }
  return { counts, sums };
}

/** The code, serializer and key selector every process of the job registers. */
export const keyedCountingCode: TaskExecutorOptions = {
  invokables: { produce, consume },
  serializers: { numbered },
  keySelectors: { key: (record: Numbered) => record.value % KEYS },
};

/**
 * The same code as a job module (`<file>#keyedCountingModule`): what a task manager whose slots
 * run on threads loads in each slot thread.
 */
export const keyedCountingModule = { userCode: keyedCountingCode };

/** Whether a subtask runs the producer (else it is a counter). */
export function isProducer(vertexName: string): boolean {
  return vertexName === PRODUCER;
}

/** The job graph of `spec`: Produce (1) -> HASH by key -> Count (2). */
export function keyedCountingJob(spec: KeyedCountingJobSpec): JobGraph {
  const graph = new JobGraph(`keyed counting, ${spec.readApi}`);
  const producer = graph.addVertex({
    name: PRODUCER,
    parallelism: 1,
    invokable: "produce",
    configuration: {
      records: spec.records,
      pauseEvery: spec.pauseEvery,
      emitPath: spec.emitPath,
      mailPoint: spec.mailPoint,
    },
  });
  const counter = graph.addVertex({
    name: COUNTER,
    parallelism: COUNTERS,
    invokable: "consume",
    configuration: {
      readApi: spec.readApi,
      failures: spec.failures.map((f) => ({ ...f })),
    },
  });
  graph.connect(producer, counter, {
    partitioner: { name: "HASH", keySelector: "key" },
    serializer: "numbered",
  });
  return graph;
}

/** The counters' results of a finished run, by subtask. */
export function counterResults(results: ReadonlyMap<string, readonly unknown[]>): CounterState[] {
  return (results.get(COUNTER) ?? []) as CounterState[];
}

/**
 * How the counters' results differ from a failure-free run of `spec`: empty when every key has
 * exactly its count and sum (each counter gets every number when the producer broadcasts).
 */
export function differences(
  spec: Pick<KeyedCountingJobSpec, "records" | "emitPath">,
  counters: readonly CounterState[],
): string[] {
  const { records } = spec;
  const copies = spec.emitPath === "broadcastEmit" ? COUNTERS : 1;
  const counts = new Array<number>(KEYS).fill(0);
  const sums = new Array<number>(KEYS).fill(0);
  for (const counter of counters) {
    for (let key = 0; key < KEYS; key++) {
      counts[key] = (counts[key] as number) + (counter.counts[key] ?? 0);
      sums[key] = (sums[key] as number) + (counter.sums[key] ?? 0);
    }
  }
  const found: string[] = [];
  let total = 0;
  for (let key = 0; key < KEYS; key++) {
    total += counts[key] as number;
    // The numbers k, k + KEYS, k + 2 KEYS, ... below `records`.
    const numbers = key < records ? Math.floor((records - 1 - key) / KEYS) + 1 : 0;
    const expectedCount = copies * numbers;
    const expectedSum = copies * (key * numbers + (KEYS * numbers * (numbers - 1)) / 2);
    if (counts[key] !== expectedCount || sums[key] !== expectedSum) {
      found.push(
        `key ${key}: ${counts[key]} numbers summing to ${sums[key]}, expected ${expectedCount} summing to ${expectedSum}`,
      );
    }
  }
  if (found.length > 0) {
    found.unshift(`${total} of ${copies * records} numbers counted, ${found.length} keys differ`);
  }
  return found.slice(0, 11);
}
