import type { JobID } from "@sluice/core";
import { Corpus, type CorpusSpec } from "@sluice/corpus";
import type { JobGraph as JobGraphType, Task, TaskInvokable } from "@sluice/runtime";
import { JobGraph } from "@sluice/runtime";
import { type JsonValue, ResultPartitionType } from "@sluice/runtime-api";
import type { DemoMode } from "./batch-mode.js";
import type { TaskProgress } from "./task-progress.js";
import { CountTask } from "./tasks/count-task.js";
import { SourceTask } from "./tasks/source-task.js";
import type { Throttle } from "./throttle.js";

/** The vertex names, as tasks are shown (`Count (1/2)#0`). */
export const SOURCE_VERTEX = "Source: Words -> Tokenize";
export const COUNT_VERTEX = "Count";

/** What the job needs to know. */
export interface WordCountOptions {
  readonly parallelism: number;
  readonly records: number;
  readonly seed: number;
  /**
   * Spread the words over at least this many seconds (`--duration`): each source paces itself to
   * its share ÷ duration words per second.
   */
  readonly durationSeconds?: number | undefined;
  /** `batch`: the exchange is BLOCKING, so the job runs stage by stage (default `streaming`). */
  readonly mode?: DemoMode;
  /** `--sink files --output <dir>`: the counters write their counts to part files there. */
  readonly sinkDirectory?: string | undefined;
}

/** The word count's graph and its two vertices. */
export interface WordCountJob {
  readonly graph: JobGraphType;
  readonly corpus: CorpusSpec;
  /** Key groups of the keyed exchange: the count vertex's max parallelism. */
  readonly maxParallelism: number;
}

/**
 * The word count (Flink's JobGraph): P source subtasks, each generating its share of a seeded
 * corpus, connected all-to-all to P count subtasks through a key-group hash exchange on the word
 * (serializer `string`, key selector `value`: the word is its own key). In batch mode the exchange
 * is a BLOCKING data set: the job side deploys the counters once every source finished.
 */
export function wordCountJob(options: WordCountOptions, jobId?: JobID): WordCountJob {
  const corpus: CorpusSpec = {
    seed: options.seed,
    records: options.records,
    parallelism: options.parallelism,
  };
  // Under high availability every leader's run of the demo submits the job with the same id.
  const graph = new JobGraph("word count", jobId);
  const source = graph.addVertex({
    name: SOURCE_VERTEX,
    parallelism: options.parallelism,
    invokable: "source",
    configuration: {
      corpus: { ...corpus },
      ...(options.durationSeconds === undefined
        ? {}
        : { pace: options.records / options.parallelism / options.durationSeconds }),
    },
  });
  const count = graph.addVertex({
    name: COUNT_VERTEX,
    parallelism: options.parallelism,
    invokable: "count",
    configuration:
      options.sinkDirectory === undefined ? {} : { sink: { directory: options.sinkDirectory } },
  });
  graph.connect(source, count, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
    partitionType:
      options.mode === "batch"
        ? ResultPartitionType.BLOCKING
        : ResultPartitionType.PIPELINED_BOUNDED,
  });
  return { graph, corpus, maxParallelism: count.maxParallelism };
}

/** What a source subtask returns: its final counters. */
export interface SourceResult {
  readonly progress: TaskProgress;
}

/** What a count subtask returns: its counts as `[word, count]` pairs, and its final counters. */
export interface CountResult {
  readonly counts: readonly (readonly [string, number])[];
  readonly progress: TaskProgress;
  /** With `--sink files`: the transactions its file sink aborted (this attempt). */
  readonly abortedTransactions?: number;
}

/**
 * The code of the word count's tasks, by the names the graph gives (`source`, `count`), for
 * `TaskExecutor.start`. Each task returns its final counters with its result, read from its
 * metrics when it ends (the job manager reads the live ones with its metric queries, and a task's
 * metrics are gone once it ended). The count tasks read `throttle`, which the job manager may
 * change while they run.
 */
export function wordCountInvokables(
  throttle: Throttle,
): Readonly<Record<string, TaskInvokable<Task>>> {
  return {
    source: async (task) => {
      const spec = task.configuration.corpus as unknown as CorpusSpec;
      const pace = task.configuration.pace;
      const source = new SourceTask(
        task,
        new Corpus(spec.seed).partition(spec, task.subtaskIndex),
        typeof pace === "number" ? pace : undefined,
      );
      await source.run();
      const result: SourceResult = { progress: source.progress() };
      return result as unknown as JsonValue;
    },
    count: async (task) => {
      const count = new CountTask(task, () => throttle.recordsPerSecond);
      await count.run();
      const result: CountResult = {
        counts: [...count.counts],
        progress: count.progress(),
        ...(task.configuration.sink === undefined
          ? {}
          : { abortedTransactions: count.abortedTransactions }),
      };
      return result as unknown as JsonValue;
    },
  };
}
