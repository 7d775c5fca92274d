import {
  BooleanSerializer,
  BytesSerializer,
  Float64Serializer,
  IllegalArgumentError,
  Int32Serializer,
  Int64Serializer,
  type JobID,
  JsonSerializer,
  StringSerializer,
  type TypeSerializer,
} from "@sluice/core";
import type { JsonValue } from "@sluice/runtime-api";
import type { PartitionerSpec } from "../messages/task-deployment-descriptor.js";
import type { UserCodeNames } from "../messages/user-code-names.js";
import type { ChannelSelector } from "../partitioner/channel-selector.js";
import type { Partitioner } from "../partitioner/custom-partitioner-wrapper.js";
import type { KeySelector } from "../partitioner/key-selector.js";
import { createChannelSelector } from "../partitioner/partitioners.js";
import { TaskDeploymentError } from "./errors.js";

/**
 * The code a task runs once deployed (Flink's `AbstractInvokable`), registered with the
 * TaskExecutor under the name a task deployment descriptor's `invokable` gives. It reads and
 * writes through `task.reader()` / `task.writer()` and should stop when `task.signal` aborts.
 * What it returns is reported with the task's FINISHED state (Flink's accumulators).
 */
// biome-ignore lint/suspicious/noConfusingVoidType: an invokable may return nothing.
export type TaskInvokable<Task> = (task: Task) => Promise<JsonValue | void> | JsonValue | void;

/**
 * Serializers every TaskExecutor knows by name: `string`, `int32`, `int64` (bigint), `float64`,
 * `boolean`, `bytes` (Uint8Array) and `json` (any JSON value).
 */
export const BUILT_IN_SERIALIZERS: Readonly<Record<string, TypeSerializer<unknown>>> = {
  string: StringSerializer.INSTANCE as TypeSerializer<unknown>,
  int32: Int32Serializer.INSTANCE as TypeSerializer<unknown>,
  int64: Int64Serializer.INSTANCE as TypeSerializer<unknown>,
  float64: Float64Serializer.INSTANCE as TypeSerializer<unknown>,
  boolean: BooleanSerializer.INSTANCE as TypeSerializer<unknown>,
  bytes: BytesSerializer.INSTANCE as TypeSerializer<unknown>,
  json: new JsonSerializer<unknown>(),
};

/** The key selector every TaskExecutor knows: `value`, the record is its own key. */
export const IDENTITY_KEY_SELECTOR = "value";

/**
 * The key selector of {@link IDENTITY_KEY_SELECTOR}: one function for every writer of the
 * process, as a user's registered selector is, so the per-record call in the partitioner sees
 * one target however many subtasks share the process (a closure per writer would be a target
 * each, and the call site would be optimized anew for each).
 */
const identityKeySelector = (record: unknown): unknown => record;

/** What a {@link JobMessageHandler} is told besides the payload. */
export interface JobMessageContext {
  /** The job the message is for: one of the jobs whose tasks run on this TaskExecutor. */
  readonly jobId: JobID;
}

/**
 * Handles a job message (`POST /jobs/:jobid/messages/:name` on the job manager's REST endpoint,
 * forwarded to every TaskExecutor that runs a task of the job): what it returns, JSON, is this
 * TaskExecutor's reply. It runs on the TaskExecutor's event loop, beside the job's tasks, so it
 * can change what they read (a rate, a flag) without a restart. A thrown error is the reply's
 * error.
 */
export type JobMessageHandler = (
  payload: JsonValue,
  context: JobMessageContext,
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler may return nothing (the reply is null).
) => Promise<JsonValue | void> | JsonValue | void;

/** What the application registers with its TaskExecutor, by name (see `TaskExecutorOptions`). */
export interface UserCode<Task> {
  /** Code tasks run, by the name in `TaskDeploymentDescriptor.invokable`. */
  readonly invokables?: Readonly<Record<string, TaskInvokable<Task>>>;
  /** Serializers beyond {@link BUILT_IN_SERIALIZERS}, by the name descriptors give. */
  // biome-ignore lint/suspicious/noExplicitAny: serializers of any record type.
  readonly serializers?: Readonly<Record<string, TypeSerializer<any>>>;
  /** Key selectors for HASH and CUSTOM partitioning, by name (`value` is built in). */
  // biome-ignore lint/suspicious/noExplicitAny: key selectors of any record and key type.
  readonly keySelectors?: Readonly<Record<string, KeySelector<any, any>>>;
  /** User partitioners for CUSTOM partitioning, by name. */
  // biome-ignore lint/suspicious/noExplicitAny: partitioners of any key type.
  readonly partitioners?: Readonly<Record<string, Partitioner<any>>>;
  /**
   * The job messages the code accepts, by name: the handlers of
   * `POST /jobs/:jobid/messages/:name` on the job manager's REST endpoint (e.g. a rate the tasks
   * read). A message of another name is refused, naming the known ones.
   */
  readonly messages?: Readonly<Record<string, JobMessageHandler>>;
}

function known(names: Iterable<string>): string {
  const list = [...names];
  return list.length === 0 ? "none are registered" : `known: ${list.sort().join(", ")}`;
}

/**
 * Resolves the names in a task deployment descriptor to the application's code and types: the
 * part of Flink's user-code class loader that turns class names into instances. Every failure
 * names the task, the field and what is known.
 */
export class UserCodeRegistry<Task> {
  constructor(private readonly code: UserCode<Task>) {}

  /** The names registered, beyond the built-in serializers and key selector. */
  names(): UserCodeNames {
    const namesOf = (table: object | undefined) => Object.keys(table ?? {}).sort();
    return {
      invokables: namesOf(this.code.invokables),
      serializers: namesOf(this.code.serializers),
      keySelectors: namesOf(this.code.keySelectors),
      partitioners: namesOf(this.code.partitioners),
    };
  }

  /** The invokable named `name`. */
  invokable(name: string, task: string): TaskInvokable<Task> {
    const invokable = this.code.invokables?.[name];
    if (typeof invokable !== "function") {
      throw new TaskDeploymentError(
        `${task}: no invokable "${name}" is registered with this TaskExecutor (${known(Object.keys(this.code.invokables ?? {}))})`,
      );
    }
    return invokable;
  }

  /**
   * The handler of the job message `name`.
   *
   * @throws IllegalArgumentError naming the message, the job and the messages the code accepts.
   */
  messageHandler(name: string, jobId: JobID): JobMessageHandler {
    const handler = Object.hasOwn(this.code.messages ?? {}, name)
      ? this.code.messages?.[name]
      : undefined;
    if (typeof handler !== "function") {
      throw new IllegalArgumentError(
        `job ${jobId} has no message "${name}" on this TaskExecutor (${known(Object.keys(this.code.messages ?? {}))})`,
      );
    }
    return handler;
  }

  /** The serializer named `name` (user-registered names shadow built-in ones). */
  serializer(name: string, task: string, field: string): TypeSerializer<unknown> {
    const serializer = this.code.serializers?.[name] ?? BUILT_IN_SERIALIZERS[name];
    if (serializer === undefined) {
      throw new TaskDeploymentError(
        `${task}: ${field} names the serializer "${name}", which this TaskExecutor does not know (${known(
          new Set([
            ...Object.keys(BUILT_IN_SERIALIZERS),
            ...Object.keys(this.code.serializers ?? {}),
          ]),
        )})`,
      );
    }
    return serializer;
  }

  /**
   * A fresh channel selector for `spec` (a new instance per writer, since round-robin selectors
   * keep their position). HASH uses `maxParallelism` key groups.
   */
  channelSelector(
    spec: PartitionerSpec,
    maxParallelism: number,
    task: string,
    field: string,
  ): ChannelSelector<unknown> {
    const needsKey = spec.name === "HASH" || spec.name === "CUSTOM";
    const keySelector = needsKey ? this.keySelector(spec.keySelector, task, field) : undefined;
    const partitioner =
      spec.name === "CUSTOM" ? this.partitioner(spec.partitioner, task, field) : undefined;
    return createChannelSelector(spec.name, {
      ...(keySelector === undefined ? {} : { keySelector }),
      ...(partitioner === undefined ? {} : { partitioner }),
      maxParallelism,
    });
  }

  private keySelector(
    name: string | undefined,
    task: string,
    field: string,
  ): KeySelector<unknown, unknown> {
    if (name === undefined) {
      throw new TaskDeploymentError(
        `${task}: ${field} partitions by key but names no keySelector (use "${IDENTITY_KEY_SELECTOR}" when the record is its key)`,
      );
    }
    const selector = this.code.keySelectors?.[name];
    if (selector !== undefined) return selector;
    if (name === IDENTITY_KEY_SELECTOR) return identityKeySelector;
    throw new TaskDeploymentError(
      `${task}: ${field} names the key selector "${name}", which this TaskExecutor does not know (${known(
        new Set([IDENTITY_KEY_SELECTOR, ...Object.keys(this.code.keySelectors ?? {})]),
      )})`,
    );
  }

  private partitioner(name: string | undefined, task: string, field: string): Partitioner<unknown> {
    const partitioner = name === undefined ? undefined : this.code.partitioners?.[name];
    if (partitioner === undefined) {
      throw new TaskDeploymentError(
        `${task}: ${field} is CUSTOM but ${name === undefined ? "names no partitioner" : `names the partitioner "${name}", which this TaskExecutor does not know`} (${known(Object.keys(this.code.partitioners ?? {}))})`,
      );
    }
    return partitioner;
  }
}
