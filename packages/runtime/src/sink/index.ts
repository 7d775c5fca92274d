export { SinkTransactionError } from "./sink-transaction-error.js";
export {
  TransactionalFileSink,
  type TransactionalFileSinkOptions,
  type TransactionalFileSinkStats,
} from "./transactional-file-sink.js";
export {
  type SinkTask,
  TwoPhaseCommitSink,
  type TwoPhaseCommitSinkStats,
} from "./two-phase-commit-sink.js";
