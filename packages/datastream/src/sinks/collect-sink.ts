import {
  DataInputDeserializer,
  DataOutputSerializer,
  SerializationError,
  type TypeSerializer,
} from "@sluice/core";
import {
  type JobResult,
  type JsonObject,
  type JsonValue,
  operatorListState,
  operatorListStateElements,
} from "@sluice/runtime";
import type { Sink, SinkContext, SinkWriter } from "./sink.js";

/** A collect sink's state and result: the records it received, serialized, in base64. */
type Collected = { records: string };

/**
 * Collects a stream's records into the job's result (the role of Flink's `executeAndCollect`),
 * exactly once: the records received so far are part of every checkpoint (an operator list
 * state, so a restore at another parallelism hands each subtask's records to one new subtask),
 * so a restore does not count a record twice. Each subtask returns its records with its task's result; read them with
 * {@link results} from the job's result, on whichever process deployed the job. For tests and
 * small results: the records travel in the task's result message and are kept in memory.
 */
export class CollectSink<T> implements Sink<T> {
  /** The operator's name: `Sink: Collect`. */
  readonly name = "Collect";

  /**
   * @param uid - the sink operator's uid (the key of its records in its task's result).
   * @param serializer - the records' serializer.
   */
  constructor(
    private readonly uid: () => string,
    private readonly serializer: () => TypeSerializer<T>,
  ) {}

  /** A subtask's writer: it keeps the records it received, serialized, in its state. */
  readonly createWriter = (_context: SinkContext): SinkWriter<T> => {
    const serializer = this.serializer();
    const buffer = new DataOutputSerializer();
    const encoded = (): Collected => ({
      records: buffer.getSharedBuffer().toString("base64"),
    });
    return {
      open: (restored) => {
        // One element per old subtask whose records came here (a restore at another parallelism
        // splits them over the new subtasks, each old subtask's records to exactly one).
        for (const element of operatorListStateElements(restored, "the collect sink's state")) {
          const records = (element as Collected | undefined)?.records;
          if (typeof records === "string") buffer.writeBytes(Buffer.from(records, "base64"));
        }
      },
      write: (value) => serializer.serialize(value, buffer),
      snapshotState: () => operatorListState([encoded()]) as unknown as JsonValue,
      result: () => encoded(),
    };
  };

  /**
   * The records every subtask of the sink collected, in subtask order, from the result of the
   * job's run (`execution.terminated`).
   *
   * @throws SerializationError when the result holds records this serializer cannot read.
   */
  results(result: Pick<JobResult, "results">): T[] {
    const uid = this.uid();
    const records: T[] = [];
    const serializer = this.serializer();
    const input = new DataInputDeserializer();
    for (const subtasks of result.results.values()) {
      for (const subtask of subtasks) {
        const collected = (subtask as JsonObject | undefined)?.[uid] as Collected | undefined;
        if (typeof collected?.records !== "string") continue;
        input.setBuffer(Buffer.from(collected.records, "base64"));
        while (input.available() > 0) {
          const at = input.position;
          try {
            records.push(serializer.deserialize(input));
          } catch (error) {
            throw new SerializationError(
              `the collect sink "${uid}" cannot read its record at byte ${at} with serializer ${serializer.name}: ${(error as Error).message}`,
              { cause: error },
            );
          }
        }
      }
    }
    return records;
  }
}
