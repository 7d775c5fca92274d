/**
 * A typed job API on Sluice (Flink's DataStream API): an environment, typed streams with map,
 * filter, flatMap, process, keyBy and keyed state, sinks, and operator chaining, compiled to the
 * runtime's JobGraph and packaged as a JobModule.
 *
 * @packageDocumentation
 */

export {
  type ListState,
  ListStateDescriptor,
  type MapState,
  MapStateDescriptor,
  type ValueState,
  ValueStateDescriptor,
} from "@sluice/runtime";
export {
  CollectStreamSink,
  DataStream,
  type KeyByOptions,
  SingleOutputStreamOperator,
} from "./data-stream.js";
export { DataStreamSink } from "./data-stream-sink.js";
export { DynamicSerializer } from "./dynamic-serializer.js";
export type {
  AggregateFunction,
  FilterFunction,
  FlatMapFunction,
  KeyedProcessContext,
  KeyedProcessFunction,
  KeySelector,
  MapFunction,
  ProcessContext,
  ProcessFunction,
  ReduceFunction,
  RuntimeContext,
  SinkFunction,
} from "./functions.js";
export {
  CHAIN_CONFIG_KEY,
  CHAIN_CONFIG_VERSION,
  type ChainConfig,
  type ChainedOperatorConfig,
  type ChainedOutput,
} from "./graph/chain-config.js";
export type { GeneratedChain, GeneratedJobGraph } from "./graph/streaming-job-graph-generator.js";
export { type AggregateOptions, KeyedStream } from "./keyed-stream.js";
export { OutputTag } from "./output-tag.js";
export { CHAIN_STATE_FORMAT, CHAIN_STATE_VERSION, type ChainState } from "./runtime/chain-state.js";
export { CollectSink } from "./sinks/collect-sink.js";
export { defaultLineFormat, FileSink, type FileSinkOptions } from "./sinks/file-sink.js";
export type { Sink, SinkContext, SinkWriter } from "./sinks/sink.js";
export type { SourceSplit } from "./sources/source-split.js";
export {
  type ExecuteOptions,
  type SourceOptions,
  StreamExecutionEnvironment,
  type StreamExecutionEnvironmentOptions,
} from "./stream-execution-environment.js";
export { Types } from "./types.js";
