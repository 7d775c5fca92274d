import { CancelCheckpointMarker } from "@sluice/core";
import { PollStatus, RecordReader, type Task, type UserCode } from "@sluice/runtime";
import type { ResultPartitionWriter } from "@sluice/runtime-api";
import {
  RecordChecker,
  type TckRecord,
  TckRecordSerializer,
  TckRecordSource,
  tckKey,
} from "./records.js";

/**
 * What a consumer task of the kit returns: records per producer, and what was wrong with any.
 * (A type alias, not an interface, so that it is assignable to a task's `JsonValue` result.)
 */
export type Consumed = {
  readonly counts: number[];
  readonly violations: string[];
};

/** What a producer task of the kit returns. */
export type Produced = {
  readonly emitted: number;
  readonly backPressured: boolean;
};

/** What a producer task of the kit writes (its task configuration). */
export interface ProducePlan {
  /** Records the producer subtask writes in all, spread over the consumers by key. */
  readonly records: number;
  /** Filler bytes per record. */
  readonly padding: number;
  /** Throw `failMessage` after this many records (the task fails). */
  readonly failAfter?: number;
  readonly failMessage?: string;
  /** `flushAll()` after every this many records. */
  readonly flushEvery?: number;
  /** Pause after this many records until `resume` (the partition stays open meanwhile). */
  readonly pauseAfter?: number;
  /** Broadcast an event (a CancelCheckpointMarker) when pausing, before waiting. */
  readonly eventAtPause?: boolean;
}

/** How a consumer task of the kit reads (its task configuration). */
export interface ConsumeOptions {
  /** Start without reading until `unstall`. */
  readonly stalled?: boolean;
  /** Stop reading (as `stalled`) once this many records arrived. */
  readonly stallAfter?: number;
  /** Return (finish the task, closing its gate) once this many records arrived. */
  readonly cancelAfter?: number;
  /** Wait this long after every batch of records (a slow consumer). */
  readonly slowdownMs?: number;
}

/** A task waiting for the test, and how to wake it. */
interface Pausable {
  paused: boolean;
  resume: (() => void) | undefined;
}

/** What a producer reported so far, and its pause control. */
export interface ProducerProgress extends Pausable {
  /** The plugin's writer of the data set the producer writes (it outlives the task). */
  readonly partition: ResultPartitionWriter;
  emitted: number;
  backPressured: boolean;
  readonly available: () => boolean;
  readonly released: () => boolean;
}

/** What a consumer reported so far, and its stall control. */
export interface ConsumerProgress extends Pausable {
  readonly checker: RecordChecker;
  /** Events other than EndOfPartition received. */
  events: number;
}

/** Waits until resumed; a task canceled meanwhile stops waiting (and throws why). */
async function waitWhilePaused(task: Pausable, signal: AbortSignal): Promise<void> {
  while (task.paused) {
    if (signal.aborted) throw signal.reason;
    let onAbort: (() => void) | undefined;
    await new Promise<void>((resolve) => {
      task.resume = resolve;
      onAbort = resolve;
      signal.addEventListener("abort", onAbort, { once: true });
    });
    signal.removeEventListener("abort", onAbort as () => void);
    task.resume = undefined;
  }
}

/** The serializer, key selector and invokable names the kit's job graphs use. */
export const TCK_NAMES = {
  serializer: "tck-record",
  keySelector: "tck-key",
  produce: "tck-produce",
  consume: "tck-consume",
} as const;

/** The number of key groups of every consumer vertex of the kit's job graphs. */
export const TCK_MAX_PARALLELISM = 128;

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The code the kit's tasks run, registered with every TaskExecutor of a test: a producer that
 * writes {@link TckRecord}s keyed over its consumers, and a consumer that checks them. Their
 * progress is kept by execution attempt, so a test can watch a producer block or a consumer
 * count, and can stall and resume a consumer.
 */
export class TckTasks {
  /** Producer progress by execution attempt (string form). */
  readonly producers = new Map<string, ProducerProgress>();
  /** Consumer progress by execution attempt (string form). */
  readonly consumers = new Map<string, ConsumerProgress>();

  /** The user code to give `TaskExecutor.start`. */
  userCode(): UserCode<Task> {
    return {
      invokables: {
        [TCK_NAMES.produce]: (task) => this.produce(task),
        [TCK_NAMES.consume]: (task) => this.consume(task),
      },
      serializers: { [TCK_NAMES.serializer]: TckRecordSerializer.INSTANCE },
      keySelectors: { [TCK_NAMES.keySelector]: tckKey },
    };
  }

  /** Lets a stalled consumer read again, or a paused producer write again. */
  resume(attempt: string): void {
    const task = this.consumers.get(attempt) ?? this.producers.get(attempt);
    if (task === undefined) throw new Error(`no task ${attempt} of the kit on this worker`);
    task.paused = false;
    task.resume?.();
  }

  private async produce(task: Task): Promise<Produced> {
    const plan = task.configuration as unknown as ProducePlan;
    const writer = task.writer<TckRecord>();
    const partition = task.partitions[0];
    if (partition === undefined) throw new Error(`${task.name} produces no partition`);
    const progress: ProducerProgress = {
      partition,
      emitted: 0,
      backPressured: false,
      available: () => writer.isAvailable(),
      released: () => partition.isReleased(),
      paused: false,
      resume: undefined,
    };
    this.producers.set(task.executionAttemptId.toString(), progress);
    const source = new TckRecordSource(
      task.subtaskIndex,
      partition.numberOfSubpartitions,
      TCK_MAX_PARALLELISM,
      plan.padding,
    );
    for (let i = 0; i < plan.records; i++) {
      if (!writer.isAvailable()) {
        progress.backPressured = true;
        await writer.getAvailableFuture();
      }
      if (plan.failAfter !== undefined && i === plan.failAfter) {
        throw new Error(plan.failMessage ?? "producer failed on purpose");
      }
      if (plan.pauseAfter !== undefined && i === plan.pauseAfter) {
        if (plan.eventAtPause) writer.broadcastEvent(new CancelCheckpointMarker(1n));
        progress.paused = true;
        await waitWhilePaused(progress, task.signal);
      }
      writer.emit(source.next(i));
      progress.emitted++;
      if (plan.flushEvery !== undefined && progress.emitted % plan.flushEvery === 0) {
        writer.flushAll();
      }
      if (i % 1024 === 1023) await yieldToLoop();
    }
    return { emitted: progress.emitted, backPressured: progress.backPressured };
  }

  private async consume(task: Task): Promise<Consumed> {
    const options = task.configuration as ConsumeOptions;
    // All-to-all: channel i of the gate reads producer subtask i.
    const producers = task.gates[0]?.numberOfInputChannels ?? 0;
    const progress: ConsumerProgress = {
      checker: new RecordChecker(producers, task.subtaskIndex),
      events: 0,
      paused: options.stalled === true,
      resume: undefined,
    };
    this.consumers.set(task.executionAttemptId.toString(), progress);
    // A reader of its own, to count the events besides EndOfPartition (the task's reader would
    // hand them to no one); the task closes the gate under it when it ends.
    const gate = task.gates[0];
    if (gate === undefined) throw new Error(`${task.name} reads no gate`);
    const reader = new RecordReader(gate, TckRecordSerializer.INSTANCE, {
      onEvent: () => {
        progress.events++;
      },
    });
    const { checker } = progress;
    try {
      await this.read(reader, progress, options, task.signal);
    } finally {
      reader.close();
    }
    return { counts: [...checker.counts], violations: [...checker.violations] };
  }

  private async read(
    reader: RecordReader<TckRecord>,
    progress: ConsumerProgress,
    options: ConsumeOptions,
    signal: AbortSignal,
  ): Promise<void> {
    const { checker } = progress;
    const accept = (record: TckRecord) => checker.accept(record);
    let stallPending = options.stallAfter !== undefined;
    for (;;) {
      await waitWhilePaused(progress, signal);
      const stallAfter = options.stallAfter ?? 0;
      const limit = stallPending ? Math.max(1, stallAfter - checker.total) : 256;
      const status = reader.pollRecords(accept, limit);
      if (stallPending && checker.total >= stallAfter) {
        stallPending = false;
        progress.paused = true;
      }
      if (options.cancelAfter !== undefined && checker.total >= options.cancelAfter) return;
      if (status === PollStatus.END_OF_INPUT) return;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
      else if (options.slowdownMs !== undefined) await sleep(options.slowdownMs);
      else await yieldToLoop();
    }
  }
}
