import { tmpdir } from "node:os";
import type { SpillingAdaptiveSpanningRecordDeserializerOptions } from "@sluice/core";
import {
  NettyShuffleEnvironmentOptions,
  type ReadableConfig,
  TaskManagerOptions,
} from "@sluice/runtime-api";

/**
 * The folders of `io.tmp.dirs` (separated by `,`), or the operating system's temporary folder
 * when the key is unset or empty. What a worker puts into
 * `ShuffleEnvironmentContext.tmpDirPaths`.
 */
export function readTmpDirectories(config: ReadableConfig): string[] {
  const value = config.getOptional(TaskManagerOptions.TMP_DIRS) ?? "";
  const directories = value
    .split(",")
    .map((directory) => directory.trim())
    .filter((directory) => directory !== "");
  return directories.length > 0 ? directories : [tmpdir()];
}

/**
 * The options of a task's RecordReader (its spanning-record deserializers) that come from the
 * worker's configuration: `taskmanager.network.spilling-threshold`,
 * `taskmanager.network.max-record-size`, and the folders spill files go to — `tmpDirPaths` (the
 * worker's `ShuffleEnvironmentContext.tmpDirPaths`) when given, else `io.tmp.dirs`.
 *
 * ```ts
 * const reader = new RecordReader(gate, serializer, {
 *   ...readRecordReaderConfiguration(configuration, context.tmpDirPaths),
 *   onEvent,
 * });
 * ```
 *
 * @throws ConfigurationError (`SLUICE_ERR_CONFIG`) naming the key when a value is invalid (a
 *   spilling threshold below the deserializer's 100 kb minimum, for one); read it at start-up.
 */
export function readRecordReaderConfiguration(
  config: ReadableConfig,
  tmpDirPaths: readonly string[] = [],
): SpillingAdaptiveSpanningRecordDeserializerOptions {
  return {
    spillingThreshold: config.get(NettyShuffleEnvironmentOptions.SPILLING_THRESHOLD),
    maxRecordSize: config.get(NettyShuffleEnvironmentOptions.MAX_RECORD_SIZE),
    tmpDirectories: tmpDirPaths.length > 0 ? [...tmpDirPaths] : readTmpDirectories(config),
  };
}
