import { IllegalArgumentError } from "@sluice/core";
import { TransactionalFileSink } from "@sluice/runtime";
import type { Sink, SinkContext, SinkWriter } from "./sink.js";

/** What a {@link FileSink} writes where. */
export interface FileSinkOptions<T> {
  /** The folder the part files go to (created if missing). */
  readonly directory: string;
  /**
   * One record's text with its line end. Default: a string as it is, anything else as JSON
   * (bigints as decimal strings), each followed by a newline.
   */
  readonly format?: (value: T) => string;
  /**
   * The part files' names start with `<partPrefix>-<subtask>-`. Default `part`. Two file sinks
   * of one job that write into one folder need different prefixes.
   */
  readonly partPrefix?: string;
}

/** A record as a line: a string as it is, anything else as JSON with bigints as strings. */
export function defaultLineFormat(value: unknown): string {
  if (typeof value === "string") return `${value}\n`;
  const json = JSON.stringify(value, (_key, v: unknown) =>
    typeof v === "bigint" ? v.toString() : v,
  );
  return `${json}\n`;
}

/**
 * An exactly-once file sink (Flink's `FileSink` with a row format), on the runtime's
 * `TransactionalFileSink`: each subtask writes its records' lines into a hidden in-progress part
 * file, pre-commits it at each checkpoint and makes it visible (`<prefix>-<subtask>-<attempt>-<n>`)
 * once the checkpoint completed, so every record is in a visible file exactly once after any
 * failure. A job without checkpoints commits each subtask's file when its input ends.
 */
export class FileSink<T> implements Sink<T> {
  /** The operator's name: `Sink: File Sink`. */
  readonly name = "File Sink";
  /** Where and how it writes. */
  readonly options: FileSinkOptions<T>;

  constructor(options: FileSinkOptions<T>) {
    if (typeof options?.directory !== "string" || options.directory === "") {
      throw new IllegalArgumentError("a FileSink needs a directory");
    }
    this.options = options;
  }

  /** A subtask's writer: a `TransactionalFileSink` of the subtask's part files. */
  readonly createWriter = (context: SinkContext): SinkWriter<T> => {
    const format = this.options.format ?? (defaultLineFormat as (value: T) => string);
    const sink = new TransactionalFileSink({
      directory: this.options.directory,
      partPrefix: `${this.options.partPrefix ?? "part"}-${context.subtaskIndex}`,
      attemptNumber: context.attemptNumber,
      taskName: context.taskName,
    });
    return {
      open: (restored) => sink.initializeState(restored),
      write: (value) => sink.write(format(value)),
      snapshotState: (checkpointId) => sink.snapshotState(checkpointId),
      persistSnapshot: (checkpointId) => sink.persistSnapshot(checkpointId),
      notifyCheckpointComplete: (checkpointId) => sink.notifyCheckpointComplete(checkpointId),
      endInput: async () => {
        if (context.checkpointing) return;
        // No checkpoint will commit the file: the end of the input does (Flink's batch mode).
        sink.snapshotState(0n);
        await sink.persistSnapshot(0n);
        await sink.notifyCheckpointComplete(0n);
      },
      close: () => sink.close(),
    };
  };
}
