import {
  type JsonValue,
  KeyedStateBackend,
  type RecordWriter,
  type Task,
  TaskDeploymentError,
} from "@sluice/runtime";
import { DynamicSerializer } from "../dynamic-serializer.js";
import type { RuntimeContext } from "../functions.js";
import type { ChainConfig, ChainedOutput } from "../graph/chain-config.js";
import {
  OneInputTransformation,
  SourceTransformation,
  type Transformation,
} from "../transformation.js";
import type { ChainState } from "./chain-state.js";
import type { Output, StreamOperator } from "./stream-operator.js";

/** Finds a job's stream graph nodes by uid: what the task side needs of a job module. */
export interface StreamGraphIndex {
  /** The job's name. */
  readonly jobName: string;
  /** The real (non-virtual) node with `uid`, if the module built one. */
  transformation(uid: string): Transformation<unknown> | undefined;
  /** Every real node's uid, for messages. */
  uids(): readonly string[];
}

/** One operator of a running chain, with its keyed state when it reads a keyed stream. */
export interface ChainedOperator {
  readonly uid: string;
  readonly operator: StreamOperator<unknown>;
  readonly keyedState: KeyedStateBackend<unknown> | undefined;
}

/**
 * The operators of one task (Flink's `OperatorChain`): a source or a head operator that reads
 * the task's input, and the operators chained after it, each calling the next directly.
 */
export interface OperatorChain {
  /** The chain's source, when it starts with one; its records go to {@link sourceOutput}. */
  readonly source: SourceTransformation<unknown> | undefined;
  readonly sourceUid: string;
  readonly sourceOutput: Output<unknown>;
  /** The operators after the source (or from the head), in chain order. */
  readonly operators: readonly ChainedOperator[];
}

/** An output that passes each record to `targets` (calls them in order). */
function outputOf(
  targets: readonly ChainedOutput[],
  sides: ReadonlyMap<string, readonly ChainedOutput[]>,
  resolve: (target: ChainedOutput) => (value: unknown) => void,
): Output<unknown> {
  const main = fanOut(targets.map(resolve));
  const side = new Map([...sides].map(([tag, outputs]) => [tag, fanOut(outputs.map(resolve))]));
  return {
    collect: main,
    // A side output nobody reads is dropped, as in Flink: no operator asked for it.
    collectSide: (tag, value) => side.get(tag)?.(value),
  };
}

function fanOut(targets: readonly ((value: unknown) => void)[]): (value: unknown) => void {
  if (targets.length === 1) return targets[0] as (value: unknown) => void;
  return (value) => {
    for (const target of targets) target(value);
  };
}

/**
 * Creates the operators `config` names from the job's stream graph, last first, wiring each to
 * the operators and writers it feeds, and restores their keyed state.
 *
 * @throws TaskDeploymentError when the module built no operator of a uid the chain names.
 */
export function createOperatorChain(
  index: StreamGraphIndex,
  config: ChainConfig,
  task: Task,
  writers: readonly RecordWriter<unknown>[],
  restored: ChainState,
  runtime: RuntimeContext,
): OperatorChain {
  const created = new Map<string, ChainedOperator>();
  const resolve = (target: ChainedOutput): ((value: unknown) => void) => {
    if ("chained" in target) {
      const next = created.get(target.chained)?.operator;
      if (next === undefined) {
        throw new TaskDeploymentError(
          `${task.name}: the chain feeds operator "${target.chained}", which comes before it`,
        );
      }
      // Called as it is: a record crosses a chained edge in one call (see StreamOperator).
      return next.processElement;
    }
    const writer = writers[target.network];
    if (writer === undefined) {
      throw new TaskDeploymentError(
        `${task.name}: the chain writes to output ${target.network}, but the task has ${writers.length}`,
      );
    }
    return (value) => writer.emit(value);
  };
  let source: SourceTransformation<unknown> | undefined;
  let sourceUid = "";
  let sourceOutput: Output<unknown> | undefined;
  const operators: ChainedOperator[] = [];
  for (let i = config.operators.length - 1; i >= 0; i--) {
    const { uid, outputs, sideOutputs } = config.operators[i] as ChainConfig["operators"][number];
    const node = index.transformation(uid);
    const output = outputOf(
      outputs,
      new Map(sideOutputs.map((side) => [side.tag, side.outputs])),
      resolve,
    );
    if (node instanceof SourceTransformation && i === 0) {
      source = node;
      sourceUid = uid;
      sourceOutput = output;
      continue;
    }
    if (!(node instanceof OneInputTransformation)) {
      throw new TaskDeploymentError(
        `${task.name}: job "${config.job}" has no operator "${uid}" here (this process's job module built ${index
          .uids()
          .join(
            ", ",
          )}): every process of a job must load the same version of its module, which builds the same stream graph`,
      );
    }
    let keyedState: KeyedStateBackend<unknown> | undefined;
    if (node.key !== undefined) {
      keyedState = KeyedStateBackend.forTask(task, {
        keySerializer: node.key.serializer,
        defaultSerializer: DynamicSerializer.INSTANCE,
      });
      keyedState.restore(restored.keyedState[uid]);
    }
    const operator = node.createOperator({
      runtime,
      output,
      keyedState,
      checkpointing: task.checkpointingMode !== undefined,
    }) as StreamOperator<unknown>;
    const chained = { uid, operator, keyedState };
    created.set(uid, chained);
    operators.unshift(chained);
  }
  return {
    source,
    sourceUid,
    sourceOutput: sourceOutput ?? { collect: () => {}, collectSide: () => {} },
    operators,
  };
}

/** The restored operator state of `uid`. */
export function operatorStateOf(restored: ChainState, uid: string): JsonValue | undefined {
  return restored.operatorState[uid];
}
