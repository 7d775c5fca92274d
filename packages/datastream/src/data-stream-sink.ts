import { IllegalArgumentError } from "@sluice/core";
import type { OneInputTransformation } from "./transformation.js";

/**
 * The sink end of a stream (Flink's `DataStreamSink`): its operator's name, uid, parallelism and
 * chaining can be set like an operator's.
 */
export class DataStreamSink<T> {
  /** @internal */
  constructor(
    /** @internal The sink's node of the stream graph. */
    protected readonly node: OneInputTransformation<T, never>,
  ) {}

  /** Names the sink operator (`Sink: <name>` in the job). */
  name(name: string): this {
    this.node.name = name;
    return this;
  }

  /** Sets the operator's uid: the id its state is restored by, stable across job versions. */
  uid(uid: string): this {
    this.node.explicitUid = uid;
    return this;
  }

  /** The sink's parallelism (default: the environment's). */
  setParallelism(parallelism: number): this {
    this.node.parallelism = checkParallelism(parallelism, this.node.name);
    return this;
  }

  /** Runs the sink in a task of its own. */
  disableChaining(): this {
    this.node.chainingStrategy = "NEVER";
    return this;
  }

  /** Starts a new chain at the sink: it is not chained to its input. */
  startNewChain(): this {
    this.node.chainingStrategy = "HEAD";
    return this;
  }
}

/** Checks an operator's parallelism. */
export function checkParallelism(parallelism: number, what: string): number {
  if (!Number.isInteger(parallelism) || parallelism < 1) {
    throw new IllegalArgumentError(
      `the parallelism of "${what}" must be an integer >= 1, got ${parallelism}`,
    );
  }
  return parallelism;
}
