/**
 * What the blocking (sort-merge) partitions of one worker put on disk, summed over all of them
 * since the worker started: the worker's `Status.Shuffle.Netty.BatchShuffle.*` metrics read these
 * (see docs/metrics.md). The partitions and their file writers count; nothing here runs per
 * record, only per buffer and per file operation.
 */
export class BatchShuffleCounters {
  /** Bytes appended to data and index files. */
  fileBytesWritten = 0;
  /** Data buffer bytes handed to the file writer, before compression. */
  bytesBeforeCompression = 0;
  /** The same buffers as written: compressed ones at their compressed size. */
  bytesAfterCompression = 0;
  /** Data and index files created. */
  filesCreated = 0;
  /** Data and index files deleted when their partition was released. */
  filesDeleted = 0;

  /** Files created and not deleted yet. */
  get filesOnDisk(): number {
    return this.filesCreated - this.filesDeleted;
  }
}
