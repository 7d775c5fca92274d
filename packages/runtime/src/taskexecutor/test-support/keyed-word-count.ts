import { StopMode, StringSerializer } from "@sluice/core";
import { JobGraph } from "../../jobmaster/job-graph.js";
import { KeyedStateBackend } from "../../state/keyed-state-backend.js";
import type { KeyedStateSnapshot } from "../../state/keyed-state-snapshot.js";
import { ValueStateDescriptor } from "../../state/state-descriptor.js";
import type { Task } from "../task.js";
import { wordOf } from "./word-count.js";

const COUNT = new ValueStateDescriptor<number>("count");

/** What the keyed word count's tasks report to the test that runs them, and what it asks of them. */
export interface KeyedWordCountWorld {
  /** Words the counters processed, all attempts together. */
  processed: number;
  /** How each counter attempt's input ended (`Count (i/n)#a` → its stop mode). */
  readonly inputEnded: Map<string, StopMode | undefined>;
  /** Whether a counter had ended its input when it snapshotted, per checkpoint id. */
  readonly endedBeforeSnapshot: Map<bigint, boolean>;
  /** The names of the attempts that started with a restored state. */
  readonly restored: Set<string>;
  /** The sources throw in their snapshots of checkpoints of this id and above. */
  failSnapshotsFrom: bigint | undefined;
  /** A counter attempt throws when this says so (its name, the words it counted). */
  failCounter: (task: Task, counted: number) => boolean;
}

/** A world in which nothing fails. */
export function keyedWordCountWorld(): KeyedWordCountWorld {
  return {
    processed: 0,
    inputEnded: new Map(),
    endedBeforeSnapshot: new Map(),
    restored: new Set(),
    failSnapshotsFrom: undefined,
    failCounter: () => false,
  };
}

/**
 * The invokables `source` and `count` of a keyed word count at the JobGraph level, reporting to
 * `world`:
 *
 * - `source` emits `words` words (its configuration; default 30,000) from its restored offset
 *   (its state), a millisecond's pause every 50 words (where its mail runs), and stops when a
 *   stop-with-savepoint asks it to (`task.stopMode`);
 * - `count` counts each word in keyed state (its state is `{ keyed }`) and returns the counts of
 *   its keys at the end of its input — unless its input was stopped without drain: then it
 *   emits nothing, as Flink finishes no operator then.
 */
export function keyedWordCountInvokables(world: KeyedWordCountWorld) {
  async function source(task: Task): Promise<number> {
    const words = (task.configuration.words as number | undefined) ?? 30_000;
    if (task.restoredState !== undefined) world.restored.add(task.name);
    let offset = (task.restoredState as { offset: number } | undefined)?.offset ?? 0;
    task.setCheckpointHandler({
      snapshotState: (checkpointId) => {
        if (world.failSnapshotsFrom !== undefined && checkpointId >= world.failSnapshotsFrom) {
          throw new Error(`${task.name}: snapshot ${checkpointId} failed on purpose`);
        }
        return { offset };
      },
    });
    const writer = task.writer<string>();
    while (offset < words && task.stopMode === undefined) {
      if (!writer.isAvailable()) await task.yieldToMailbox(writer.getAvailableFuture());
      else if (offset % 50 === 0) {
        await task.yieldToMailbox(new Promise((resolve) => setTimeout(resolve, 1)));
      }
      if (task.stopMode !== undefined) break;
      writer.emit(wordOf(offset, task.subtaskIndex));
      offset++;
    }
    return offset;
  }

  async function count(task: Task): Promise<Record<string, number> | undefined> {
    const backend = KeyedStateBackend.forTask(task, { keySerializer: StringSerializer.INSTANCE });
    if (task.restoredState !== undefined) world.restored.add(task.name);
    backend.restore((task.restoredState as { keyed?: KeyedStateSnapshot } | undefined)?.keyed);
    task.setCheckpointHandler({
      snapshotState: (checkpointId) => {
        world.endedBeforeSnapshot.set(checkpointId, task.stopMode !== undefined);
        return { keyed: backend.snapshot() };
      },
    });
    const counts = backend.getState(COUNT);
    let counted = 0;
    for await (const word of task.reader<string>()) {
      backend.setCurrentKey(word);
      counts.update((counts.value() ?? 0) + 1);
      world.processed++;
      counted++;
      if (world.failCounter(task, counted)) throw new Error(`${task.name} failed on purpose`);
    }
    world.inputEnded.set(task.name, task.stopMode);
    if (task.stopMode === StopMode.NO_DRAIN) return undefined;
    const result: Record<string, number> = {};
    for (const word of backend.getKeys("count")) {
      backend.setCurrentKey(word);
      result[word] = counts.value() ?? 0;
    }
    return result;
  }

  return { source, count };
}

/**
 * Adds a keyed word count to `graph`: `<prefix>Source` (2 subtasks) → HASH by word →
 * `<prefix>Count` (`parallelism` subtasks).
 */
export function addKeyedWordCount(
  graph: JobGraph,
  parallelism: number,
  options: {
    readonly prefix?: string;
    readonly maxParallelism?: number;
    readonly words?: number;
  } = {},
): void {
  const prefix = options.prefix ?? "";
  const sources = graph.addVertex({
    name: `${prefix}Source`,
    parallelism: 2,
    invokable: "source",
    ...(options.words === undefined ? {} : { configuration: { words: options.words } }),
  });
  const counts = graph.addVertex({
    name: `${prefix}Count`,
    parallelism,
    invokable: "count",
    ...(options.maxParallelism === undefined ? {} : { maxParallelism: options.maxParallelism }),
  });
  graph.connect(sources, counts, {
    partitioner: { name: "HASH", keySelector: "value" },
    serializer: "string",
  });
}

/** A job of one keyed word count with `Count` at `parallelism`. */
export function keyedWordCount(parallelism: number, maxParallelism?: number): JobGraph {
  const graph = new JobGraph(`word count at ${parallelism}`);
  addKeyedWordCount(graph, parallelism, maxParallelism === undefined ? {} : { maxParallelism });
  return graph;
}
