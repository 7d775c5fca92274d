import {
  END_OF_SOURCE,
  type SourceReader,
  type SourceReaderFactory,
  type SourceSplit,
} from "./source-split.js";

/**
 * The reader of a generated source (Flink's `DataGeneratorSource` over a number sequence):
 * subtask `i` of `p` emits `generate(n)` for `n = i, i + p, i + 2p, ...` below `count`, from its
 * offset on; `count` may be `Infinity` (an unbounded source, which runs until the job is
 * canceled).
 */
export function generatorSource<T>(
  count: number,
  generate: (index: number) => T,
): SourceReaderFactory<T> {
  return (split: SourceSplit): SourceReader<T> => {
    const step = split.numberOfSubtasks;
    let index = split.subtaskIndex + split.offset * step;
    return {
      kind: "sync",
      poll: () => {
        if (index >= count) return END_OF_SOURCE;
        const value = generate(index);
        index += step;
        return value;
      },
    };
  };
}
