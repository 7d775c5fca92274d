import type { RuntimeContext } from "../functions.js";
import type { OperatorContext, StreamOperator } from "../runtime/stream-operator.js";
import type { Sink } from "../sinks/sink.js";

/** Runs a {@link Sink}'s writer as the last operator of a chain (Flink's `SinkWriterOperator`). */
export function sinkOperator<T>(sink: Sink<T>, uid: () => string) {
  return ({ runtime, checkpointing }: OperatorContext<never>): StreamOperator<T> => {
    const context: RuntimeContext & { uid: string; checkpointing: boolean } = {
      ...runtime,
      uid: uid(),
      checkpointing,
    };
    const writer = sink.createWriter(context);
    return {
      processElement: writer.write,
      ...(writer.open === undefined ? {} : { open: writer.open }),
      ...(writer.endInput === undefined ? {} : { endInput: writer.endInput }),
      ...(writer.snapshotState === undefined ? {} : { snapshotState: writer.snapshotState }),
      ...(writer.persistSnapshot === undefined ? {} : { persistSnapshot: writer.persistSnapshot }),
      ...(writer.notifyCheckpointComplete === undefined
        ? {}
        : { notifyCheckpointComplete: writer.notifyCheckpointComplete }),
      ...(writer.close === undefined ? {} : { close: writer.close }),
      ...(writer.result === undefined ? {} : { result: writer.result }),
    };
  };
}
