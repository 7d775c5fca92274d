import { CheckpointError, type JsonValue, type KeyedStateSnapshot } from "@sluice/runtime";

/** The `format` of a typed job's task state. */
export const CHAIN_STATE_FORMAT = "sluice-datastream-chain";

/** The version of the task state layout this release writes and reads. */
export const CHAIN_STATE_VERSION = 1;

/**
 * What a task of a typed job stores in a checkpoint (its `snapshotState` result): per operator
 * uid, the operator's own state (a source's offset, a sink's transactions) and its keyed state
 * (a keyed state snapshot, grouped by key group). Restoring at another parallelism may put, in
 * place of a keyed state snapshot, the list of every old subtask's snapshots of that operator:
 * the task's backend keeps the key groups of its own range.
 */
export type ChainState = {
  readonly format: typeof CHAIN_STATE_FORMAT;
  readonly version: number;
  readonly operatorState: { [uid: string]: JsonValue };
  readonly keyedState: { [uid: string]: KeyedStateSnapshot | KeyedStateSnapshot[] };
};

/**
 * The chain state a task was restored with; empty for a fresh start.
 *
 * @throws CheckpointError when the restored state is not a typed job's task state of this version.
 */
export function readChainState(restored: JsonValue | undefined, taskName: string): ChainState {
  if (restored === undefined || restored === null) {
    return {
      format: CHAIN_STATE_FORMAT,
      version: CHAIN_STATE_VERSION,
      operatorState: {},
      keyedState: {},
    };
  }
  const state = restored as Partial<ChainState>;
  if (
    typeof restored !== "object" ||
    state.format !== CHAIN_STATE_FORMAT ||
    state.version !== CHAIN_STATE_VERSION ||
    typeof state.operatorState !== "object" ||
    typeof state.keyedState !== "object"
  ) {
    throw new CheckpointError(
      `${taskName}: the restored state is not a task state of a typed job of version ${CHAIN_STATE_VERSION} (format "${state.format}", version ${state.version})`,
    );
  }
  return state as ChainState;
}
