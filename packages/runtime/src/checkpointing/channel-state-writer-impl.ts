import { type Deferred, deferred, type NetworkBuffer } from "@sluice/core";
import type {
  ChannelStateWriter,
  InputChannelInfo,
  ResultSubpartitionInfo,
} from "@sluice/runtime-api";
import { CheckpointError } from "./checkpoint-error.js";
import type { TaskChannelState } from "./task-channel-state.js";

/** The channel state of one checkpoint while it is collected. */
interface PendingChannelState {
  /** Chunks per input channel (`gate:channel`), in arrival order. */
  readonly inputs: Map<string, { info: InputChannelInfo; chunks: Uint8Array[] }>;
  readonly outputs: Map<string, { info: ResultSubpartitionInfo; chunks: Uint8Array[] }>;
  inputFinished: boolean;
  outputFinished: boolean;
  /** Output announced with addOutputDataFuture whose promise has not settled yet. */
  pendingOutputs: number;
  /** Settled with the checkpoint's whole channel state, or rejected when it is aborted. */
  readonly result: Deferred<TaskChannelState>;
}

/**
 * A task's {@link ChannelStateWriter} (Flink's ChannelStateWriterImpl): collects the in-flight
 * data of each unaligned checkpoint in memory, per channel and in the order it is added, and
 * hands the whole {@link TaskChannelState} over once the checkpoint's input and output are
 * complete; the task's checkpoint then writes it next to the task's snapshot.
 *
 * `start` opens a checkpoint; data for a checkpoint that was not started (or already ended) is
 * recycled and dropped, as its checkpoint is void. The output is complete once the task sent its
 * barriers ({@link finishOutput}), the input once every channel delivered its barrier or ended
 * ({@link finishInput}). Output announced with {@link addOutputDataFuture} (a timeoutable aligned
 * barrier still queued in a subpartition) holds the output open until its promise settles.
 */
export class ChannelStateWriterImpl implements ChannelStateWriter {
  private readonly taskName: string;
  private readonly pending = new Map<bigint, PendingChannelState>();

  constructor(taskName: string) {
    this.taskName = taskName;
  }

  /** Opens checkpoint `checkpointId`; data added for it from now on is kept. Idempotent. */
  start(checkpointId: bigint): void {
    if (this.pending.has(checkpointId)) return;
    const result = deferred<TaskChannelState>();
    // A checkpoint aborted before anyone waits for its result must not be an unhandled rejection.
    result.promise.catch(() => {});
    this.pending.set(checkpointId, {
      inputs: new Map(),
      outputs: new Map(),
      inputFinished: false,
      outputFinished: false,
      pendingOutputs: 0,
      result,
    });
  }

  /** True while checkpoint `checkpointId` collects data. */
  isStarted(checkpointId: bigint): boolean {
    return this.pending.has(checkpointId);
  }

  addInputData(
    checkpointId: bigint,
    channel: InputChannelInfo,
    data: readonly NetworkBuffer[],
  ): void {
    const state = this.pending.get(checkpointId);
    const chunks = copyAndRecycle(data);
    if (state === undefined || state.inputFinished || chunks.length === 0) return;
    const key = `${channel.gateIndex}:${channel.channelIndex}`;
    let entry = state.inputs.get(key);
    if (entry === undefined) {
      entry = {
        info: { gateIndex: channel.gateIndex, channelIndex: channel.channelIndex },
        chunks,
      };
      state.inputs.set(key, entry);
    } else {
      entry.chunks.push(...chunks);
    }
  }

  addOutputData(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: readonly NetworkBuffer[],
  ): void {
    const state = this.pending.get(checkpointId);
    const chunks = copyAndRecycle(data);
    if (state === undefined || state.outputFinished) return;
    appendOutput(state, subpartition, chunks);
  }

  /**
   * Holds the output of `checkpointId` open until `data` settles (a subpartition's timeoutable
   * barrier left it, or turned unaligned): its buffers are then added as with
   * {@link addOutputData}; a rejection aborts the checkpoint.
   */
  addOutputDataFuture(
    checkpointId: bigint,
    subpartition: ResultSubpartitionInfo,
    data: Promise<readonly NetworkBuffer[]>,
  ): void {
    const state = this.pending.get(checkpointId);
    if (state === undefined) {
      // The checkpoint is void here: its data is still recycled once known.
      data.then(copyAndRecycle, () => {});
      return;
    }
    state.pendingOutputs++;
    data.then(
      (buffers) => {
        const chunks = copyAndRecycle(buffers);
        if (this.pending.get(checkpointId) !== state) return;
        state.pendingOutputs--;
        appendOutput(state, subpartition, chunks);
        this.completeIfDone(checkpointId, state);
      },
      (error: unknown) => {
        if (this.pending.get(checkpointId) !== state) return;
        this.abort(
          checkpointId,
          new CheckpointError(
            `${this.taskName}: the output of checkpoint ${checkpointId} in subpartition ${subpartition.partitionIndex}:${subpartition.subpartitionIndex} was lost: ${(error as Error).message}`,
            { cause: error },
          ),
        );
      },
    );
  }

  /** Every channel delivered the barrier of `checkpointId` (or ended): its input is complete. */
  finishInput(checkpointId: bigint): void {
    const state = this.pending.get(checkpointId);
    if (state === undefined) return;
    state.inputFinished = true;
    this.completeIfDone(checkpointId, state);
  }

  /** The task sent the barriers of `checkpointId`: its output is complete. */
  finishOutput(checkpointId: bigint): void {
    const state = this.pending.get(checkpointId);
    if (state === undefined) return;
    state.outputFinished = true;
    this.completeIfDone(checkpointId, state);
  }

  /**
   * Resolves with the channel state of `checkpointId` once its input and output are complete;
   * rejects when it is aborted first. Ask before the checkpoint can complete (right after
   * {@link start}): a completed checkpoint is forgotten here.
   *
   * @throws CheckpointError when the checkpoint was never started here.
   */
  getWriteResult(checkpointId: bigint): Promise<TaskChannelState> {
    const state = this.pending.get(checkpointId);
    if (state === undefined) {
      throw new CheckpointError(
        `${this.taskName}: no channel state is collected for checkpoint ${checkpointId}`,
      );
    }
    return state.result.promise;
  }

  /** Drops the data of `checkpointId` and fails its result with `cause`. */
  abort(checkpointId: bigint, cause: Error): void {
    const state = this.pending.get(checkpointId);
    if (state === undefined) return;
    this.pending.delete(checkpointId);
    state.result.reject(cause);
  }

  /** Aborts every checkpoint still collecting (the task ends). */
  close(cause: Error): void {
    for (const id of [...this.pending.keys()]) this.abort(id, cause);
  }

  /**
   * Aborts every checkpoint whose input is not complete (the task's inputs closed: no barrier
   * comes any more). One that waits only for its output (timeoutable barriers still queued in
   * the task's finished partitions, which the consumers still read) is kept: it completes when
   * the barriers leave or turn unaligned, at the latest at the alignment timeout.
   */
  closeInput(cause: Error): void {
    for (const [id, state] of [...this.pending]) {
      if (!state.inputFinished) this.abort(id, cause);
    }
  }

  private completeIfDone(checkpointId: bigint, state: PendingChannelState): void {
    if (!state.inputFinished || !state.outputFinished || state.pendingOutputs > 0) return;
    this.pending.delete(checkpointId);
    state.result.resolve({
      inputChannelState: [...state.inputs.values()].map(({ info, chunks }) => ({
        info,
        data: concat(chunks),
      })),
      resultSubpartitionState: [...state.outputs.values()].map(({ info, chunks }) => ({
        info,
        data: concat(chunks),
      })),
    });
  }
}

/** Appends `chunks` to the output of `subpartition` in `state`, in the order they come. */
function appendOutput(
  state: PendingChannelState,
  subpartition: ResultSubpartitionInfo,
  chunks: Uint8Array[],
): void {
  if (chunks.length === 0) return;
  const key = `${subpartition.partitionIndex}:${subpartition.subpartitionIndex}`;
  const entry = state.outputs.get(key);
  if (entry === undefined) {
    state.outputs.set(key, {
      info: {
        partitionIndex: subpartition.partitionIndex,
        subpartitionIndex: subpartition.subpartitionIndex,
      },
      chunks,
    });
  } else {
    entry.chunks.push(...chunks);
  }
}

/** Copies the readable bytes of every buffer (empty ones left out) and recycles them all. */
function copyAndRecycle(data: readonly NetworkBuffer[]): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (const buffer of data) {
    try {
      if (buffer.readableBytes() > 0) chunks.push(Uint8Array.from(buffer.readableView()));
    } finally {
      buffer.recycleBuffer();
    }
  }
  return chunks;
}

function concat(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0] as Uint8Array;
  let length = 0;
  for (const chunk of chunks) length += chunk.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}
