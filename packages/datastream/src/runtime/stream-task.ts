import { setTimeout as delay, setImmediate as yieldToEventLoop } from "node:timers/promises";
import { StopMode } from "@sluice/core";
import {
  type JsonObject,
  type JsonValue,
  PollStatus,
  type RecordWriter,
  type Task,
} from "@sluice/runtime";
import type { RuntimeContext } from "../functions.js";
import { readChainConfig } from "../graph/chain-config.js";
import { END_OF_SOURCE } from "../sources/source-split.js";
import {
  CHAIN_STATE_FORMAT,
  CHAIN_STATE_VERSION,
  type ChainState,
  readChainState,
} from "./chain-state.js";
import {
  type ChainedOperator,
  createOperatorChain,
  type OperatorChain,
  operatorStateOf,
  type StreamGraphIndex,
} from "./operator-chain.js";

/** Records a task reads per poll before it checks its outputs and yields to the event loop. */
const RECORDS_PER_POLL = 256;
/** Records a source emits between two turns of the event loop (where its checkpoints run). */
const RECORDS_PER_YIELD = 256;

/** A source's checkpointed position: the records its subtask emitted. */
type SourceState = { offset: number };

/**
 * Whether every writer takes records. Checked after every record a source emits, so it is kept
 * small (an indexed loop; `for...of` compiles to an iterator protocol several times larger),
 * which leaves the engine room to inline the record writer into the source's per-record loop.
 */
function allAvailable(writers: readonly RecordWriter<unknown>[]): boolean {
  for (let i = 0; i < writers.length; i++) {
    if (!(writers[i] as RecordWriter<unknown>).isAvailable()) return false;
  }
  return true;
}

/** Resolves once every writer takes records again (each record may go to all of them). */
function availability(writers: readonly RecordWriter<unknown>[]): Promise<unknown> {
  return Promise.all(
    writers.filter((writer) => !writer.isAvailable()).map((writer) => writer.getAvailableFuture()),
  );
}

/**
 * Runs one task of a typed job (Flink's `StreamTask`): builds its operator chain from the
 * vertex's chain description and the job's stream graph, restores it, runs its source or reads
 * its input through the chain, and takes part in checkpoints with the state of every operator of
 * the chain (a {@link ChainState}). Records cross from one chained operator to the next as the
 * same object, without serialization.
 *
 * Checkpoints happen between two records only: in a source where it yields to its mailbox, in a
 * task with an input inside the poll that meets the barrier. A record is processed by the whole
 * chain synchronously, so every operator's state holds exactly the records before the barrier.
 */
export async function runStreamTask(
  index: StreamGraphIndex,
  task: Task,
): Promise<JsonValue | undefined> {
  const config = readChainConfig(task.configuration, task.name);
  const restored = readChainState(task.restoredState, task.name);
  const writers = task.partitions.map((_, i) => task.writer<unknown>(i));
  const runtime: RuntimeContext = {
    taskName: task.name,
    subtaskIndex: task.subtaskIndex,
    numberOfSubtasks: task.numberOfSubtasks,
    attemptNumber: task.attemptNumber,
    maxParallelism: task.maxParallelism,
  };
  const chain = createOperatorChain(index, config, task, writers, restored, runtime);
  const { operators } = chain;
  const position: SourceState = {
    offset: (operatorStateOf(restored, chain.sourceUid) as SourceState | undefined)?.offset ?? 0,
  };
  try {
    // Downstream first, so that an operator's consumers are ready before it emits.
    for (const { uid, operator } of [...operators].reverse()) {
      await operator.open?.(operatorStateOf(restored, uid));
    }
    registerCheckpointing(task, chain, position);
    if (chain.source !== undefined) await runSource(task, chain, writers, position);
    else await runInput(task, operators[0] as ChainedOperator, writers);
    // A stop-with-savepoint without drain ends no operator's input (Flink finishes no operator
    // then): what it would emit at the end stays in its state, which the savepoint holds.
    if (task.stopMode !== StopMode.NO_DRAIN) {
      for (const { operator } of operators) await operator.endInput?.();
    }
  } catch (error) {
    await Promise.allSettled(operators.map(({ operator }) => operator.close?.()));
    throw error;
  }
  const results: JsonObject = {};
  for (const { uid, operator } of operators) {
    const result = operator.result?.();
    if (result !== undefined) results[uid] = result;
  }
  return Object.keys(results).length > 0 ? results : undefined;
}

/** The chain's checkpoint handler and listener: every operator's state, in one {@link ChainState}. */
function registerCheckpointing(task: Task, chain: OperatorChain, position: SourceState): void {
  const { operators } = chain;
  task.setCheckpointHandler({
    snapshotState: (checkpointId) => {
      const operatorState: ChainState["operatorState"] = {};
      const keyedState: ChainState["keyedState"] = {};
      if (chain.source !== undefined) operatorState[chain.sourceUid] = { offset: position.offset };
      for (const { uid, operator, keyedState: backend } of operators) {
        const state = operator.snapshotState?.(checkpointId);
        if (state !== undefined) operatorState[uid] = state;
        if (backend !== undefined) keyedState[uid] = backend.snapshot();
      }
      const state: ChainState = {
        format: CHAIN_STATE_FORMAT,
        version: CHAIN_STATE_VERSION,
        operatorState,
        keyedState,
      };
      return state;
    },
    persistSnapshot: async (checkpointId) => {
      await Promise.all(operators.map(({ operator }) => operator.persistSnapshot?.(checkpointId)));
    },
  });
  task.setCheckpointListener({
    notifyCheckpointComplete: async (checkpointId) => {
      for (const { operator } of operators) await operator.notifyCheckpointComplete?.(checkpointId);
    },
    notifyCheckpointAborted: async (checkpointId) => {
      for (const { operator } of operators) await operator.notifyCheckpointAborted?.(checkpointId);
    },
  });
}

/**
 * Emits the source's records through the chain from the restored offset on. Checkpoint triggers
 * (mail) run between two records: after every batch of a few hundred records, while the outputs
 * are back-pressured, while a rate limit holds the source, and while an async source waits for
 * its next record. A stop-with-savepoint's trigger stops it there (`task.stopMode`).
 */
async function runSource(
  task: Task,
  chain: OperatorChain,
  writers: readonly RecordWriter<unknown>[],
  position: SourceState,
): Promise<void> {
  const source = chain.source as NonNullable<OperatorChain["source"]>;
  const output = chain.sourceOutput;
  const reader = source.open({
    subtaskIndex: task.subtaskIndex,
    numberOfSubtasks: task.numberOfSubtasks,
    offset: position.offset,
  });
  const rate =
    source.recordsPerSecond === undefined
      ? undefined
      : source.recordsPerSecond / task.numberOfSubtasks;
  const startedAt = performance.now();
  let emitted = 0;
  for (;;) {
    if (!allAvailable(writers)) await task.yieldToMailbox(availability(writers));
    else if (reader.kind === "sync") await task.yieldToMailbox();
    else task.processMail();
    // A stop-with-savepoint stopped the source (Flink's SourceOperator.stop): it emits no more.
    if (task.stopMode !== undefined) return;
    let batch = RECORDS_PER_YIELD;
    if (rate !== undefined) {
      const elapsed = performance.now() - startedAt;
      const allowed = Math.floor((elapsed * rate) / 1000) + 1 - emitted;
      if (allowed <= 0) {
        await task.yieldToMailbox(delay(startedAt + (emitted / rate) * 1000 - performance.now()));
        continue;
      }
      batch = Math.min(batch, allowed);
    }
    if (reader.kind === "async") {
      const next = reader.iterator.next();
      // The record is not emitted yet, so a checkpoint taken meanwhile does not count it.
      await task.yieldToMailbox(next);
      // Stopped while it waited: the record is not emitted, and a resumed job reads it again.
      if (task.stopMode !== undefined) return;
      const result = await next;
      if (result.done === true) return;
      output.collect(result.value);
      position.offset++;
      emitted++;
      continue;
    }
    const count = emitBatch(reader.poll, output.collect, writers, batch);
    if (count < 0) {
      position.offset += -count - 1;
      return;
    }
    position.offset += count;
    emitted += count;
  }
}

/**
 * Emits up to `batch` records of a synchronous source through the chain, stopping early when
 * an output is back-pressured; returns how many it emitted, or `-(n + 1)` when the source ended
 * after `n`. A function of its own rather than a loop inside {@link runSource}: the engine then
 * optimizes the per-record path (poll, the chain, the record writer) as one small unit instead of
 * as part of a large async function, and inlines the writer's serialization and channel
 * selection into it.
 */
function emitBatch(
  poll: () => unknown,
  collect: (value: unknown) => void,
  writers: readonly RecordWriter<unknown>[],
  batch: number,
): number {
  for (let i = 0; i < batch; i++) {
    const value = poll();
    if (value === END_OF_SOURCE) return -(i + 1);
    collect(value);
    if (!allAvailable(writers)) return i + 1;
  }
  return batch;
}

/** Reads the task's input through the chain's head until it ends, under back-pressure. */
async function runInput(
  task: Task,
  head: ChainedOperator,
  writers: readonly RecordWriter<unknown>[],
): Promise<void> {
  const reader = task.reader<unknown>(0);
  const push = head.operator.processElement;
  for (;;) {
    const status = reader.pollRecords(push, RECORDS_PER_POLL);
    if (status === PollStatus.END_OF_INPUT) return;
    if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    else if (!allAvailable(writers)) await availability(writers);
    else await yieldToEventLoop();
    task.signal.throwIfAborted();
  }
}
