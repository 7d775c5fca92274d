export { OutputFlusher } from "./output-flusher.js";
export {
  PollStatus,
  RecordReader,
  type RecordReaderInput,
  type RecordReaderOptions,
} from "./record-reader.js";
export {
  readRecordReaderConfiguration,
  readTmpDirectories,
} from "./record-reader-configuration.js";
export {
  BroadcastRecordWriter,
  type BufferTimeout,
  bufferTimeoutOf,
  ChannelSelectorRecordWriter,
  createRecordWriter,
  RecordWriter,
  type RecordWriterOptions,
} from "./record-writer.js";
