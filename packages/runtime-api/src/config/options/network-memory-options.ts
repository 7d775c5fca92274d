import { atLeast, ConfigOptions } from "../config-option.js";
import { formatMemorySize } from "../memory-size.js";

const MIN_SEGMENT_SIZE = 256;
const MAX_SEGMENT_SIZE = 1024 ** 3;

/** Flink refuses a page size that is not a power of two (`MathUtils.isPowerOf2`). */
function isPowerOfTwo(value: number): boolean {
  return value > 0 && Number.isInteger(Math.log2(value));
}

/**
 * Network memory and buffer counts (Flink's `TaskManagerOptions` memory keys and
 * `NettyShuffleEnvironmentOptions` buffer keys). Flink 2.0 removed several buffer keys and hard-codes
 * their 1.20 values; Sluice keeps them as options with those values as defaults.
 */
export const NetworkMemoryOptions = {
  /** Lower bound of a worker's network memory. */
  NETWORK_MEMORY_MIN: ConfigOptions.key("taskmanager.memory.network.min")
    .memoryType()
    .defaultValue("64mb")
    .withDeprecatedKeys("taskmanager.network.memory.min")
    .withDescription(
      "Minimum network memory of a worker: the segments of its `NetworkBufferPool`. The number of " +
        "network buffers is the network memory divided by `taskmanager.memory.segment-size` " +
        "(64 mb / 32 kb = 2048).",
    ),

  /** Upper bound of a worker's network memory; unset means unlimited. */
  NETWORK_MEMORY_MAX: ConfigOptions.key("taskmanager.memory.network.max")
    .memoryType()
    .noDefaultValue()
    .withDeprecatedKeys("taskmanager.network.memory.max")
    .withDescription(
      "Maximum network memory of a worker. Unset means unlimited (Flink's default since 1.17), so " +
        "the size is bounded by `taskmanager.memory.network.min` and the fraction only.",
    ),

  /** Share of the worker's memory budget used for network memory. */
  NETWORK_MEMORY_FRACTION: ConfigOptions.key("taskmanager.memory.network.fraction")
    .numberType()
    .defaultValue(0.1)
    .withDeprecatedKeys("taskmanager.network.memory.fraction")
    .withValidator((value) => (value >= 0 && value < 1 ? undefined : "a fraction in [0, 1)"))
    .withDescription(
      "Fraction of the worker's total memory budget used for network memory, clamped to " +
        "[`taskmanager.memory.network.min`, `taskmanager.memory.network.max`].",
    ),

  /** Size of one memory segment, i.e. of one network buffer. */
  MEMORY_SEGMENT_SIZE: ConfigOptions.key("taskmanager.memory.segment-size")
    .memoryType()
    .defaultValue("32kb")
    .withValidator((value) =>
      value >= MIN_SEGMENT_SIZE && value <= MAX_SEGMENT_SIZE && isPowerOfTwo(value)
        ? undefined
        : `a power of two in [${formatMemorySize(MIN_SEGMENT_SIZE)}, ${formatMemorySize(MAX_SEGMENT_SIZE)}] ` +
          "(e.g. 4kb, 32kb, 64kb), as Flink requires of its memory segments",
    )
    .withDescription(
      "Size of one memory segment, which is the size of one network buffer and the largest " +
        "payload of one buffer on the wire. A power of two, as in Flink.",
    ),

  /** Smallest buffer size the buffer debloater may choose. */
  MIN_MEMORY_SEGMENT_SIZE: ConfigOptions.key("taskmanager.memory.min-segment-size")
    .memoryType()
    .defaultValue("256 bytes")
    .withValidator(atLeast(1, "a size"))
    .withDescription(
      "Lower bound of the buffer size when buffer debloating shrinks buffers: a gate never asks " +
        "for less, and a producer raises a smaller `NewBufferSize` to it.",
    ),

  /** Whether input gates shrink their producers' buffers to the measured throughput. */
  BUFFER_DEBLOAT_ENABLED: ConfigOptions.key("taskmanager.network.memory.buffer-debloat.enabled")
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "Buffer debloating: every input gate measures how fast its task consumes data and asks " +
        "its producers (`NewBufferSize`) for buffers of the size that holds " +
        "`taskmanager.network.memory.buffer-debloat.target` of data in all buffers in use, " +
        "between `taskmanager.memory.min-segment-size` and `taskmanager.memory.segment-size`. " +
        "Under back-pressure the queues then hold less data, so aligned barriers wait less and " +
        "unaligned checkpoints store less. Memory use is unchanged: only the fill of each " +
        "buffer is capped.",
    ),

  /** The time in-flight data should take to consume. */
  BUFFER_DEBLOAT_TARGET: ConfigOptions.key("taskmanager.network.memory.buffer-debloat.target")
    .durationType()
    .defaultValue("1s")
    .withValidator(atLeast(1, "a duration (ms)"))
    .withDescription(
      "How long the data in a gate's buffers in use should take the task to consume at the " +
        "measured throughput: the buffer size becomes throughput × target / buffers in use.",
    ),

  /** How often the buffer size is recalculated. */
  BUFFER_DEBLOAT_PERIOD: ConfigOptions.key("taskmanager.network.memory.buffer-debloat.period")
    .durationType()
    .defaultValue("200ms")
    .withValidator(atLeast(1, "a period (ms)"))
    .withDescription(
      "How often each task measures its input throughput and recalculates the buffer size. " +
        "Shorter reacts faster to changes and costs more.",
    ),

  /** Samples the buffer size is averaged over. */
  BUFFER_DEBLOAT_SAMPLES: ConfigOptions.key("taskmanager.network.memory.buffer-debloat.samples")
    .intType()
    .defaultValue(20)
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "The number of recalculations the new buffer size is averaged over (an exponential " +
        "moving average with α = 2 / (samples + 1)): more samples change the size more slowly.",
    ),

  /** The smallest change of the buffer size that is announced. */
  BUFFER_DEBLOAT_THRESHOLD_PERCENTAGES: ConfigOptions.key(
    "taskmanager.network.memory.buffer-debloat.threshold-percentages",
  )
    .intType()
    .defaultValue(25)
    .withValidator(atLeast(0, "a percentage"))
    .withDescription(
      "A new buffer size is announced to the producers only when it differs from the last " +
        "announced one by at least this many percent of it, or reaches the minimum or maximum " +
        "size: small changes are not worth the messages.",
    ),

  /** Exclusive buffers per remote input channel (the initial credit). */
  NETWORK_BUFFERS_PER_CHANNEL: ConfigOptions.key("taskmanager.network.memory.buffers-per-channel")
    .intType()
    .defaultValue(2)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "Exclusive buffers per remote input channel, requested at set-up and announced as the " +
        "initial credit of the partition request. Local channels use none. Flink 2.0 removed the " +
        "key and hard-codes 2.",
    ),

  /** Floating buffers shared by the channels of one input gate. */
  NETWORK_EXTRA_BUFFERS_PER_GATE: ConfigOptions.key(
    "taskmanager.network.memory.floating-buffers-per-gate",
  )
    .intType()
    .defaultValue(8)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "Floating buffers per input gate, shared by its channels and handed out by backlog. Also the " +
        "extra buffers of a bounded output pool (numSubpartitions × buffers-per-channel + this). " +
        "Flink 2.0 removed the key and hard-codes 8.",
    ),

  /** Whether a gate or output pool whose buffers cannot be guaranteed takes fewer instead of failing. */
  NETWORK_EXCLUSIVE_BUFFERS_FALLBACK: ConfigOptions.key(
    "taskmanager.network.memory.exclusive-buffers-fallback",
  )
    .booleanType()
    .defaultValue(false)
    .withDescription(
      "`false` (the default) keeps Flink's behaviour: a task whose gate or output pool the " +
        "network memory cannot guarantee its buffers fails at deployment with 'Insufficient " +
        "number of network buffers' (SLUICE_ERR_INSUFFICIENT_BUFFERS), naming the keys to " +
        "raise. `true` lets jobs deploy on small budgets at some cost in throughput: a gate " +
        "whose remote channels' exclusive buffers do not fit reads with floating buffers only " +
        "(as with `buffers-per-channel: 0`), guaranteed up to `floating-buffers-per-gate` of " +
        "them; a pipelined output pool that cannot get one buffer per subpartition plus one is " +
        "guaranteed up to 8 and writes the records of all its subpartitions into shared " +
        "segments, each sent as one slice per subpartition. Such a fallback guarantee is at most " +
        "a sixteenth of the buffers not yet guaranteed (at least 1). Half of the worker's " +
        "buffers is then kept from full guarantees, so the pools deployed last still find " +
        "buffers: every pool deployed after half of them is guaranteed falls back, even one " +
        "whose full guarantee would fit; every pool borrows the rest as excess. A warning names " +
        "each pool that falls back, its task and the buffers it got, and " +
        "`Status.Shuffle.Netty.BuffersFallbacks` counts them. Not a Flink key: Flink has only " +
        "the failure.",
    ),

  /** Output buffers one subpartition may hold before the writer sees back-pressure. */
  NETWORK_MAX_BUFFERS_PER_CHANNEL: ConfigOptions.key(
    "taskmanager.network.memory.max-buffers-per-channel",
  )
    .intType()
    .defaultValue(10)
    .withValidator((value) =>
      value >= 2
        ? undefined
        : "a count of at least 2: the buffer a subpartition is being written into counts against " +
          "the limit, so with 1 no buffer could ever be finished and every writer would stop " +
          "after its first records",
    )
    .withDescription(
      "Maximum buffers of the output pool one subpartition may hold; beyond it the pool reports " +
        "unavailable (back-pressure), which bounds the memory taken by data skew. The buffer " +
        "being written counts, so the smallest value that lets a writer progress is 2. Flink 2.0 " +
        "removed the key and hard-codes 10.",
    ),

  /** Buffers an output pool may lend beyond its size while a record is being written. */
  NETWORK_MAX_OVERDRAFT_BUFFERS_PER_GATE: ConfigOptions.key(
    "taskmanager.network.memory.max-overdraft-buffers-per-gate",
  )
    .intType()
    .defaultValue(20)
    .withValidator(atLeast(0, "a count"))
    .withDescription(
      "Overdraft buffers per output pool of a pipelined partition: requested beyond the pool size " +
        "only when no normal buffer is left, so a record being written can complete; while any is " +
        "in use the pool reports unavailable. Flink 1.16-1.20 default 5; Flink 2.0 removed the " +
        "key and hard-codes 20, which Sluice uses as default.",
    ),

  /** Upper bound of the buffers an input gate requires. */
  NETWORK_READ_MAX_REQUIRED_BUFFERS_PER_GATE: ConfigOptions.key(
    "taskmanager.network.memory.read-buffer.required-per-gate.max",
  )
    .intType()
    .noDefaultValue()
    .withValidator(atLeast(1, "a count"))
    .withDescription(
      "Maximum number of buffers an input gate requires (its pool's minimum). Unset: unlimited " +
        "for pipelined partitions, 1000 for blocking ones. With N channels the gate needs " +
        "min(this, N × buffers-per-channel + 1); exclusive buffers per channel shrink to fit.",
    ),

  /** How long a request for exclusive buffers may wait for free segments. */
  NETWORK_BUFFERS_REQUEST_TIMEOUT: ConfigOptions.key(
    "taskmanager.network.memory.buffers-request-timeout",
  )
    .durationType()
    .defaultValue("30s")
    .withDeprecatedKeys("taskmanager.network.memory.exclusive-buffers-request-timeout-ms")
    .withDescription(
      "How long a channel waits for the `NetworkBufferPool` to free segments when requesting its " +
        "exclusive buffers before it fails with `SLUICE_ERR_INSUFFICIENT_BUFFERS`.",
    ),
} as const;
