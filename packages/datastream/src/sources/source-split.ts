/**
 * Which part of a source one subtask reads, and where it resumes (Flink's source split with its
 * checkpointed position): subtask `subtaskIndex` of `numberOfSubtasks`, after the first `offset`
 * records it emitted before the checkpoint it was restored from (0 on a fresh start).
 */
export interface SourceSplit {
  /** The subtask that reads the split (0-based). */
  readonly subtaskIndex: number;
  /** The source's parallelism. */
  readonly numberOfSubtasks: number;
  /** Records the subtask emitted before the checkpoint it was restored from; 0 on a fresh start. */
  readonly offset: number;
}

/** What a synchronous source's `poll` returns when it has no record left. */
export const END_OF_SOURCE: unique symbol = Symbol("end of source");

/**
 * One subtask's reader of a source: a synchronous one polls its records one by one (no object
 * per record; `poll` is a plain function, called without its reader), an asynchronous one is an
 * iterator whose `next()` may wait.
 */
export type SourceReader<T> =
  | { readonly kind: "sync"; readonly poll: () => T | typeof END_OF_SOURCE }
  | { readonly kind: "async"; readonly iterator: AsyncIterator<T> };

/** Opens one subtask's reader of a source: the records of its split from its offset on. */
export type SourceReaderFactory<T> = (split: SourceSplit) => SourceReader<T>;
