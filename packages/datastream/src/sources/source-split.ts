/**
 * Which part of a source one subtask reads, and where it resumes (Flink's source split with its
 * checkpointed position): subtask `subtaskIndex` of `numberOfSubtasks`, after the first `offset`
 * records it emitted before the checkpoint it was restored from (0 on a fresh start).
 */
export interface SourceSplit {
  readonly subtaskIndex: number;
  readonly numberOfSubtasks: number;
  readonly offset: number;
}

/** Opens one subtask's reader of a source: the records of its split from its offset on. */
export type SourceReaderFactory<T> = (split: SourceSplit) => Iterator<T> | AsyncIterator<T>;
