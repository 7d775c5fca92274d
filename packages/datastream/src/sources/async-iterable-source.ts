import {
  END_OF_SOURCE,
  type SourceReader,
  type SourceReaderFactory,
  type SourceSplit,
} from "./source-split.js";

/**
 * The reader of a source over what `open(split)` returns, an async or a sync iterable: the
 * application decides which records each subtask reads, and must start at `split.offset` (the
 * records the subtask emitted before the checkpoint it was restored from), e.g. by seeking.
 */
export function iterableSource<T>(
  open: (split: SourceSplit) => AsyncIterable<T> | Iterable<T>,
): SourceReaderFactory<T> {
  return (split: SourceSplit): SourceReader<T> => {
    const iterable = open(split);
    if (Symbol.asyncIterator in iterable) {
      return { kind: "async", iterator: iterable[Symbol.asyncIterator]() };
    }
    const iterator = (iterable as Iterable<T>)[Symbol.iterator]();
    return {
      kind: "sync",
      poll: () => {
        const next = iterator.next();
        return next.done === true ? END_OF_SOURCE : next.value;
      },
    };
  };
}
