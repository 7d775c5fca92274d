import type { JobGraph as JobGraphType, Task, TaskInvokable } from "@sluice/runtime";
import { JobGraph } from "@sluice/runtime";
import { type JsonValue, ResultPartitionType } from "@sluice/runtime-api";
import type { DemoMode } from "./batch-mode.js";
import { Corpus, type CorpusSpec } from "./corpus.js";
import type { TaskProgress } from "./task-progress.js";
import { CountTask } from "./tasks/count-task.js";
import { SourceTask } from "./tasks/source-task.js";

/** The vertex names, as tasks are shown (`Count (1/2)#0`). */
export const SOURCE_VERTEX = "Source: Words -> Tokenize";
export const COUNT_VERTEX = "Count";

/** What the job needs to know. */
export interface WordCountOptions {
  readonly parallelism: number;
  readonly records: number;
  readonly seed: number;
  /** `batch`: the exchange is BLOCKING, so the job runs stage by stage (default `streaming`). */
  readonly mode?: DemoMode;
  /** `--count-rate`: records per second each counter subtask consumes at most. */
  readonly countRate?: number;
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
export function wordCountJob(options: WordCountOptions): WordCountJob {
  const corpus: CorpusSpec = {
    seed: options.seed,
    records: options.records,
    parallelism: options.parallelism,
  };
  const graph = new JobGraph("word count");
  const source = graph.addVertex({
    name: SOURCE_VERTEX,
    parallelism: options.parallelism,
    invokable: "source",
    configuration: { corpus: { ...corpus } },
  });
  const count = graph.addVertex({
    name: COUNT_VERTEX,
    parallelism: options.parallelism,
    invokable: "count",
    ...(options.countRate === undefined
      ? {}
      : { configuration: { recordsPerSecond: options.countRate } }),
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
}

/**
 * The code of the word count's tasks, by the names the graph gives (`source`, `count`), for
 * `TaskExecutor.start`. Each running task registers its live counters in `progress`, keyed by
 * execution attempt, where the task manager reads them for its reports; it removes them when it
 * ends, returning its final counters with its result (so the job manager has them even when the
 * last progress report is older than the task's end).
 */
export function wordCountInvokables(
  progress: Map<string, () => TaskProgress>,
): Readonly<Record<string, TaskInvokable<Task>>> {
  const track = async <R>(task: Task, probe: () => TaskProgress, run: () => Promise<R>) => {
    const key = task.executionAttemptId.toString();
    progress.set(key, probe);
    try {
      return await run();
    } finally {
      progress.delete(key);
    }
  };
  return {
    source: async (task) => {
      const spec = task.configuration.corpus as unknown as CorpusSpec;
      const source = new SourceTask(task, new Corpus(spec.seed).partition(spec, task.subtaskIndex));
      await track(
        task,
        () => source.progress(),
        () => source.run(),
      );
      const result: SourceResult = { progress: source.progress() };
      return result as unknown as JsonValue;
    },
    count: async (task) => {
      const count = new CountTask(task);
      await track(
        task,
        () => count.progress(),
        () => count.run(),
      );
      const result: CountResult = { counts: [...count.counts], progress: count.progress() };
      return result as unknown as JsonValue;
    },
  };
}
