/**
 * When a consumer may start reading a partition (Flink's `ConsumingConstraint`):
 * - `BLOCKING`: only after the producer finished;
 * - `MUST_BE_PIPELINED`: only while the producer runs (producer and consumers are scheduled
 *   together);
 * - `CAN_BE_PIPELINED`: either.
 */
export type ConsumingConstraint = "BLOCKING" | "MUST_BE_PIPELINED" | "CAN_BE_PIPELINED";

/** The names of the partition types, which is also their serialized form. */
export type ResultPartitionTypeName =
  | "BLOCKING"
  | "BLOCKING_PERSISTENT"
  | "PIPELINED"
  | "PIPELINED_BOUNDED"
  | "PIPELINED_APPROXIMATE"
  | "HYBRID_FULL"
  | "HYBRID_SELECTIVE";

/**
 * One kind of result partition and its properties (Flink's `ResultPartitionType`).
 * Values are frozen singletons of {@link ResultPartitionType}; compare by `name` when a value may
 * come from another copy of this package (e.g. after deserialization in another bundle).
 */
export interface ResultPartitionTypeInfo {
  /** The type's name; also how it is serialized. */
  readonly name: ResultPartitionTypeName;
  /** When consumers may read it. */
  readonly consumingConstraint: ConsumingConstraint;
  /**
   * True when the partition must be consumed while it is produced (`MUST_BE_PIPELINED`; Flink's
   * `isPipelinedOrPipelinedBoundedResultPartition`): PIPELINED, PIPELINED_BOUNDED,
   * PIPELINED_APPROXIMATE.
   */
  readonly isPipelined: boolean;
  /** True when consumers may start before the producer finished (pipelined or hybrid). */
  readonly canBePipelinedConsumed: boolean;
  /** True for BLOCKING and BLOCKING_PERSISTENT: consumed only after the producer finished. */
  readonly isBlocking: boolean;
  /** True for the hybrid types, which spill to disk and can be read while being produced. */
  readonly isHybrid: boolean;
  /**
   * True when the output pool is bounded (numSubpartitions × buffers-per-channel + floating), so a
   * slow consumer back-pressures the producer. PIPELINED has an unbounded pool.
   */
  readonly isBounded: boolean;
  /** True when the data can be read more than once (it outlives one consumption attempt). */
  readonly isReconsumable: boolean;
  /** True when the partition outlives the job (BLOCKING_PERSISTENT; released by the user). */
  readonly isPersistent: boolean;
  /**
   * Who releases it: `upstream` = the producer side, once the consumer's single consumption
   * attempt ended (pipelined types); `scheduler` = the coordinator through
   * `ShuffleMaster.releasePartitionExternally` and `ShuffleEnvironment.releasePartitionsLocally`.
   */
  readonly releasedBy: "upstream" | "scheduler";
  /** True when data buffers may be compressed (blocking and hybrid types only). */
  readonly supportsCompression: boolean;
}

function define(
  name: ResultPartitionTypeName,
  consumingConstraint: ConsumingConstraint,
  props: {
    isBounded: boolean;
    isReconsumable: boolean;
    isPersistent?: boolean;
    releasedBy: "upstream" | "scheduler";
  },
): ResultPartitionTypeInfo {
  const isBlocking = name === "BLOCKING" || name === "BLOCKING_PERSISTENT";
  const isHybrid = name === "HYBRID_FULL" || name === "HYBRID_SELECTIVE";
  return Object.freeze({
    name,
    consumingConstraint,
    isPipelined: consumingConstraint === "MUST_BE_PIPELINED",
    canBePipelinedConsumed: consumingConstraint !== "BLOCKING",
    isBlocking,
    isHybrid,
    isBounded: props.isBounded,
    isReconsumable: props.isReconsumable,
    isPersistent: props.isPersistent ?? false,
    releasedBy: props.releasedBy,
    supportsCompression: isBlocking || isHybrid,
  });
}

/**
 * The partition types, an enum-like object of {@link ResultPartitionTypeInfo} values:
 *
 * | type | reconsumable | bounded | consumed | released by |
 * | --- | --- | --- | --- | --- |
 * | BLOCKING | yes | no | after the producer finished | scheduler |
 * | BLOCKING_PERSISTENT | yes | no | after the producer finished | scheduler (user) |
 * | PIPELINED | no | no | while produced | upstream |
 * | PIPELINED_BOUNDED | no | yes | while produced (the streaming default) | upstream |
 * | PIPELINED_APPROXIMATE | no | yes | while produced; reconnectable | upstream |
 * | HYBRID_FULL | yes | no | either | scheduler |
 * | HYBRID_SELECTIVE | no | no | either | scheduler |
 */
export const ResultPartitionType = Object.freeze({
  /** Written completely, to disk, before any consumer reads it; readable more than once, until the scheduler releases it (batch exchanges). */
  BLOCKING: define("BLOCKING", "BLOCKING", {
    isBounded: false,
    isReconsumable: true,
    releasedBy: "scheduler",
  }),
  /** Like BLOCKING, but kept after the job ends, until it is released explicitly (Flink's cached intermediate results). */
  BLOCKING_PERSISTENT: define("BLOCKING_PERSISTENT", "BLOCKING", {
    isBounded: false,
    isReconsumable: true,
    isPersistent: true,
    releasedBy: "scheduler",
  }),
  /** Consumed while it is produced, with an unbounded output pool (streaming exchanges without back-pressure from the pool size). */
  PIPELINED: define("PIPELINED", "MUST_BE_PIPELINED", {
    isBounded: false,
    isReconsumable: false,
    releasedBy: "upstream",
  }),
  /** Consumed while it is produced, with a bounded output pool, so a slow consumer back-pressures the producer: the streaming default. */
  PIPELINED_BOUNDED: define("PIPELINED_BOUNDED", "MUST_BE_PIPELINED", {
    isBounded: true,
    isReconsumable: false,
    releasedBy: "upstream",
  }),
  /** Pipelined and bounded, and a consumer may reconnect to a restarted producer and lose only what was in flight (Flink's approximate local recovery). */
  PIPELINED_APPROXIMATE: define("PIPELINED_APPROXIMATE", "CAN_BE_PIPELINED", {
    isBounded: true,
    isReconsumable: false,
    releasedBy: "upstream",
  }),
  /** Spilled to disk and readable while it is produced; every buffer is kept, so it can be read again (Flink's hybrid shuffle). */
  HYBRID_FULL: define("HYBRID_FULL", "CAN_BE_PIPELINED", {
    isBounded: false,
    isReconsumable: true,
    releasedBy: "scheduler",
  }),
  /** Readable while it is produced, spilling only what consumers cannot take at once; read once (Flink's hybrid shuffle). */
  HYBRID_SELECTIVE: define("HYBRID_SELECTIVE", "CAN_BE_PIPELINED", {
    isBounded: false,
    isReconsumable: false,
    releasedBy: "scheduler",
  }),
} as const);

/** A result partition type: one of the values of {@link ResultPartitionType}. */
export type ResultPartitionType = ResultPartitionTypeInfo;

/**
 * Looks a type up by name (exact, upper case), or returns `undefined`. Used by descriptor
 * deserialization; also accepts a value from another copy of this package and returns this copy's
 * singleton.
 */
export function resultPartitionTypeOf(
  nameOrType: string | ResultPartitionTypeInfo,
): ResultPartitionType | undefined {
  const name = typeof nameOrType === "string" ? nameOrType : nameOrType?.name;
  return Object.hasOwn(ResultPartitionType, name)
    ? ResultPartitionType[name as ResultPartitionTypeName]
    : undefined;
}
