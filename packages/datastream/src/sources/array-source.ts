import {
  END_OF_SOURCE,
  type SourceReader,
  type SourceReaderFactory,
  type SourceSplit,
} from "./source-split.js";

/**
 * The reader of a source over an array (Flink's `fromCollection` / `fromData`): subtask `i` of
 * `p` emits the elements at `i, i + p, i + 2p, ...`, from its offset on.
 */
export function arraySource<T>(elements: readonly T[]): SourceReaderFactory<T> {
  return (split: SourceSplit): SourceReader<T> => {
    const step = split.numberOfSubtasks;
    let index = split.subtaskIndex + split.offset * step;
    return {
      kind: "sync",
      poll: () => {
        if (index >= elements.length) return END_OF_SOURCE;
        const value = elements[index] as T;
        index += step;
        return value;
      },
    };
  };
}
