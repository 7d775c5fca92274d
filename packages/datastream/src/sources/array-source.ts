import type { SourceReaderFactory, SourceSplit } from "./source-split.js";

/**
 * The reader of a source over an array (Flink's `fromCollection` / `fromData`): subtask `i` of
 * `p` emits the elements at `i, i + p, i + 2p, ...`, from its offset on.
 */
export function arraySource<T>(elements: readonly T[]): SourceReaderFactory<T> {
  return (split: SourceSplit) => {
    const step = split.numberOfSubtasks;
    let index = split.subtaskIndex + split.offset * step;
    return {
      next: (): IteratorResult<T> => {
        if (index >= elements.length) return { done: true, value: undefined };
        const value = elements[index] as T;
        index += step;
        return { done: false, value };
      },
    };
  };
}
