export { OutputFlusher } from "./output-flusher.js";
export { PollStatus, RecordReader, type RecordReaderOptions } from "./record-reader.js";
export {
  BroadcastRecordWriter,
  type BufferTimeout,
  bufferTimeoutOf,
  ChannelSelectorRecordWriter,
  createRecordWriter,
  RecordWriter,
  type RecordWriterOptions,
} from "./record-writer.js";
