/**
 * The word count as a job module (Flink's packaged program): `sluice run word-count-job.js
 * --records 2m` builds its job graph where the job is submitted, and every task manager loads the
 * same module (from its `--usrlib` folder, or by path) to run its tasks. `pnpm demo` submits the
 * same graph to the cluster it starts.
 */
import { IllegalArgumentError } from "@sluice/core";
import { Corpus, type CorpusSpec } from "@sluice/corpus";
import { defineJob, JobGraph, type JobModule, type Task } from "@sluice/runtime";
import { type JsonValue, ResultPartitionType } from "@sluice/runtime-api";
import * as z from "zod";
import type { TaskProgress } from "./task-progress.js";
import { CountTask } from "./tasks/count-task.js";
import { SourceTask } from "./tasks/source-task.js";
import { JobThrottles } from "./throttle.js";
import { parseWordCountArgs, type WordCountOptions } from "./word-count-options.js";

/** The vertex names, as tasks are shown (`Count (1/2)#0`). */
export const SOURCE_VERTEX = "Source: Words -> Tokenize";
export const COUNT_VERTEX = "Count";

/** The job message that changes the counters' throttle, and its payload. */
export const THROTTLE_MESSAGE = "throttle";

/** Its payload: records per second per count subtask (at least 1); `null` lifts the throttle. */
export const ThrottleSchema = z.object({
  recordsPerSecond: z.number().min(1).finite().nullable(),
});

/** What a source subtask returns: its final counters. */
export interface SourceResult {
  readonly progress: TaskProgress;
}

/** What a count subtask returns: its counts as `[word, count]` pairs, and its final counters. */
export interface CountResult {
  readonly counts: readonly (readonly [string, number])[];
  readonly progress: TaskProgress;
  /** With a file sink: the transactions it aborted (this attempt). */
  readonly abortedTransactions?: number;
}

/** The word count's corpus, as every process rebuilds it from its spec. */
export function corpusOf(options: WordCountOptions): CorpusSpec {
  return { seed: options.seed, records: options.records, parallelism: options.parallelism };
}

/**
 * The word count (Flink's JobGraph): P source subtasks, each generating its share of a seeded
 * corpus, connected all-to-all to P count subtasks through a key-group hash exchange on the word
 * (serializer `string`, key selector `value`: the word is its own key). In batch mode the exchange
 * is a BLOCKING data set: the job side deploys the counters once every source finished.
 */
export function wordCountGraph(options: WordCountOptions): JobGraph {
  const corpus = corpusOf(options);
  const graph = new JobGraph("word count");
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
    configuration: {
      ...(options.output === undefined ? {} : { sink: { directory: options.output } }),
      ...(options.throttle === undefined ? {} : { throttle: options.throttle }),
    },
  });
  graph.connect(source, count, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
    partitionType:
      options.mode === "batch"
        ? ResultPartitionType.BLOCKING
        : ResultPartitionType.PIPELINED_BOUNDED,
  });
  return graph;
}

/** The counters' throttles of this process's jobs (one per task manager process). */
const throttles = new JobThrottles();

async function runSource(task: Task): Promise<JsonValue> {
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
}

async function runCount(task: Task): Promise<JsonValue> {
  const initial = task.configuration.throttle;
  const throttle = throttles.track(
    task.jobId.toString(),
    typeof initial === "number" ? initial : undefined,
  );
  try {
    const count = new CountTask(task, throttle.limit);
    await count.run();
    const result: CountResult = {
      counts: [...count.counts],
      progress: count.progress(),
      ...(task.configuration.sink === undefined
        ? {}
        : { abortedTransactions: count.abortedTransactions }),
    };
    return result as unknown as JsonValue;
  } finally {
    throttle.done();
  }
}

/**
 * The job module: the tasks' code by the names the graph gives (`source`, `count`), the job
 * message `throttle`, and the graph from the arguments (`--records`, `--parallelism`, `--seed`,
 * `--mode`, `--duration`, `--throttle`, `--output`). Each task returns its final counters with its
 * result, read from its metrics when it ends (a task's metrics are gone once it ended); a count
 * task its counts too.
 */
const wordCount: JobModule = defineJob({
  name: "word count",
  userCode: {
    invokables: { source: runSource, count: runCount },
    messages: {
      [THROTTLE_MESSAGE]: (payload, { jobId }) => {
        const parsed = ThrottleSchema.safeParse(payload);
        if (!parsed.success) {
          throw new IllegalArgumentError(
            `throttle expects {"recordsPerSecond": <a number of at least 1, or null to lift it>}, got ${JSON.stringify(payload)}`,
          );
        }
        throttles.setLimit(jobId.toString(), parsed.data.recordsPerSecond);
        return { recordsPerSecond: parsed.data.recordsPerSecond };
      },
    },
  },
  createJobGraph: ({ args }) => wordCountGraph(parseWordCountArgs(args)),
});

export default wordCount;
