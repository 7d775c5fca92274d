import { IllegalArgumentError, type TypeSerializer } from "@sluice/core";

/**
 * Names a side output of a process function (Flink's `OutputTag`): `ctx.output(tag, value)`
 * emits to it, `stream.getSideOutput(tag)` reads it as a stream of its own. Its id must be unique
 * within the job; `serializer` declares its records' format (default: the dynamic serializer).
 */
export class OutputTag<T> {
  /** The tag's id. */
  readonly id: string;
  /** The records' serializer, when declared. */
  readonly serializer: TypeSerializer<T> | undefined;

  constructor(id: string, serializer?: TypeSerializer<T>) {
    if (typeof id !== "string" || id === "") {
      throw new IllegalArgumentError("an OutputTag needs a non-empty id");
    }
    this.id = id;
    this.serializer = serializer;
  }

  /** `OutputTag(<id>)`. */
  toString(): string {
    return `OutputTag(${this.id})`;
  }
}
