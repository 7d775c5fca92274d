import { CheckpointError } from "./checkpoint-error.js";
import type {
  InputChannelStateHandle,
  ResultSubpartitionStateHandle,
  TaskChannelState,
} from "./task-channel-state.js";

/** File magic ("SLCS") and version of the channel state layout this build writes and reads. */
const MAGIC = 0x534c4353;
const VERSION = 1;
const KIND_INPUT = 0;
const KIND_OUTPUT = 1;
/** Bytes of the file header: magic, version. */
const HEADER_BYTES = 8;
/** Bytes of an entry header: kind (1), gate or partition index (4), channel index (4), length (4). */
const ENTRY_HEADER_BYTES = 13;

/**
 * The byte layout of a task's channel state file (Flink's ChannelStateSerializer), all integers
 * big-endian:
 *
 * ```text
 * magic "SLCS" (int32) | version (int32) | entry*
 * entry: kind (int8: 0 input, 1 output) | gate or partition index (int32)
 *        | channel or subpartition index (int32) | length (int32) | length bytes
 * ```
 *
 * One entry per channel, its in-flight bytes in stream order.
 */
export const ChannelStateSerializer = {
  /** `state` in the file layout. */
  serialize(state: TaskChannelState): Buffer {
    let size = HEADER_BYTES;
    for (const handle of state.inputChannelState) size += ENTRY_HEADER_BYTES + handle.data.length;
    for (const handle of state.resultSubpartitionState) {
      size += ENTRY_HEADER_BYTES + handle.data.length;
    }
    const out = Buffer.allocUnsafe(size);
    out.writeInt32BE(MAGIC, 0);
    out.writeInt32BE(VERSION, 4);
    let at = HEADER_BYTES;
    const entry = (kind: number, first: number, second: number, data: Uint8Array): void => {
      out.writeInt8(kind, at);
      out.writeInt32BE(first, at + 1);
      out.writeInt32BE(second, at + 5);
      out.writeInt32BE(data.length, at + 9);
      out.set(data, at + ENTRY_HEADER_BYTES);
      at += ENTRY_HEADER_BYTES + data.length;
    };
    for (const { info, data } of state.inputChannelState) {
      entry(KIND_INPUT, info.gateIndex, info.channelIndex, data);
    }
    for (const { info, data } of state.resultSubpartitionState) {
      entry(KIND_OUTPUT, info.partitionIndex, info.subpartitionIndex, data);
    }
    return out;
  },

  /**
   * Reads a channel state file back.
   *
   * @param what names the file in error messages.
   * @throws CheckpointError when the bytes are not a channel state file of this version, or are
   *   cut short.
   */
  deserialize(bytes: Uint8Array, what: string): TaskChannelState {
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    if (view.length < HEADER_BYTES || view.readInt32BE(0) !== MAGIC) {
      throw new CheckpointError(`${what} is not a channel state file (no SLCS header)`);
    }
    const version = view.readInt32BE(4);
    if (version !== VERSION) {
      throw new CheckpointError(
        `${what} is a channel state file of version ${version}; this build reads version ${VERSION}`,
      );
    }
    const inputs: InputChannelStateHandle[] = [];
    const outputs: ResultSubpartitionStateHandle[] = [];
    let at = HEADER_BYTES;
    while (at < view.length) {
      if (view.length - at < ENTRY_HEADER_BYTES) {
        throw new CheckpointError(`${what} ends inside an entry header at byte ${at}`);
      }
      const kind = view.readInt8(at);
      const first = view.readInt32BE(at + 1);
      const second = view.readInt32BE(at + 5);
      const length = view.readInt32BE(at + 9);
      const start = at + ENTRY_HEADER_BYTES;
      if (first < 0 || second < 0 || length < 0 || start + length > view.length) {
        throw new CheckpointError(
          `${what}: the entry at byte ${at} (indexes ${first}/${second}, ${length} bytes) does not fit the file of ${view.length} bytes`,
        );
      }
      const data = new Uint8Array(length);
      data.set(view.subarray(start, start + length));
      if (kind === KIND_INPUT) {
        inputs.push({ info: { gateIndex: first, channelIndex: second }, data });
      } else if (kind === KIND_OUTPUT) {
        outputs.push({ info: { partitionIndex: first, subpartitionIndex: second }, data });
      } else {
        throw new CheckpointError(`${what}: unknown entry kind ${kind} at byte ${at}`);
      }
      at = start + length;
    }
    return { inputChannelState: inputs, resultSubpartitionState: outputs };
  },
};
