import type { NetworkBufferPool } from "@sluice/core";
import type { ResultPartitionType } from "@sluice/runtime-api";
import type { ExclusiveBuffersFallback } from "../consumer/single-input-gate.js";
import { emitBuffersFallbackWarning } from "./buffers-fallback-warning.js";
import {
  FALLBACK_OUTPUT_POOL_MIN_BUFFERS,
  floatingOnlyGateBuffersSpec,
  type GateBuffersSpec,
} from "./gate-buffers-spec.js";
import type { NetworkShuffleEnvironmentConfiguration } from "./network-shuffle-environment-configuration.js";

/** The two settings the fallback reads. */
type FallbackSettings = Pick<
  NetworkShuffleEnvironmentConfiguration,
  "exclusiveBuffersFallback" | "floatingBuffersPerGate"
>;

/** The share of a worker's network buffers that full guarantees leave for fallen-back pools. */
const FALLBACK_RESERVE_FRACTION = 0.5;

/** A pool that falls back is guaranteed at most this fraction (1/n) of the unguaranteed buffers. */
const FALLBACK_SHARE_DIVISOR = 16;

/**
 * How a worker's pools take fewer buffers than configured when its network memory is short
 * (`taskmanager.network.memory.exclusive-buffers-fallback`, off by default): output pools of
 * pipelined partitions and gates deploy with a smaller guarantee, each reported once in a
 * warning naming its task and the buffers it got, and counted
 * (`Status.Shuffle.Netty.BuffersFallbacks`), instead of failing with InsufficientBuffersError
 * as in Flink. Off, every pool gets its full guarantee or fails.
 */
export class BuffersFallback {
  private readonly networkBufferPool: NetworkBufferPool;
  /** `exclusiveBuffersFallback` turns it on; a floating-only gate gets `floatingBuffersPerGate` at most. */
  private readonly settings: FallbackSettings;
  private fallbacks = 0;

  constructor(networkBufferPool: NetworkBufferPool, settings: FallbackSettings) {
    this.networkBufferPool = networkBufferPool;
    this.settings = settings;
  }

  /** Pools (gates and output pools) that fell back since the worker started. */
  get numberOfFallbacks(): number {
    return this.fallbacks;
  }

  /**
   * The guarantee of an output pool: its minimum, or — when the network memory cannot guarantee
   * that and the fallback is on — min(8, minimum) for a pipelined partition, whose writer then
   * puts the records of all subpartitions into shared segments (see SharedSegmentWriter). A
   * blocking partition's sort buffers cannot shrink that way: it keeps Flink's failure.
   */
  outputPoolGuarantee(type: ResultPartitionType, min: number, name: string): number {
    const unreserved = this.networkBufferPool.getNumberOfUnreservedSegments();
    if (!this.settings.exclusiveBuffersFallback || !type.isPipelined || this.fitsInFull(min)) {
      return min;
    }
    // Even one buffer lets the writer progress: the segment it shares among the subpartitions
    // is sent, sliced, whenever it is full.
    const reduced = this.fallbackGuarantee(Math.min(min, FALLBACK_OUTPUT_POOL_MIN_BUFFERS));
    if (reduced < 1) return min; // cannot help: fail naming the real minimum
    this.fallbacks++;
    emitBuffersFallbackWarning(
      `${name} is guaranteed ${reduced} network buffers instead of ${min} (one per subpartition ` +
        `plus one): only ${unreserved} of ${this.networkBufferPool.totalNumberOfMemorySegments} ` +
        `are not yet guaranteed to other pools (${this.fallbackReserve()} of them kept for the ` +
        `pools deployed later). It writes all subpartitions into shared segments, sent as ` +
        `smaller buffers, which costs some throughput. Give the worker more network memory ` +
        `('taskmanager.memory.network.min', 'taskmanager.memory.network.max') or lower the ` +
        `parallelism; 'taskmanager.network.memory.exclusive-buffers-fallback: false' fails instead.`,
    );
    return reduced;
  }

  /**
   * Whether a pool may take its full guarantee of `count` buffers. With the fallback on, half
   * of the worker's buffers is kept from full guarantees: pools deploy one after
   * another, and without such a reserve the first few would take everything and leave the
   * later ones nothing to fall back on. The reserve is still lent to every pool as excess
   * until it is guaranteed to fallen-back pools.
   */
  private fitsInFull(count: number): boolean {
    return count <= this.networkBufferPool.getNumberOfUnreservedSegments() - this.fallbackReserve();
  }

  /**
   * The guarantee of a pool that falls back and would like `wanted` buffers: at most a
   * sixteenth of what is not yet guaranteed (at least 1 while anything is), so that each later
   * pool still finds buffers and the guarantees shrink gently instead of running out; 0 when
   * nothing is left.
   */
  private fallbackGuarantee(wanted: number): number {
    const unreserved = this.networkBufferPool.getNumberOfUnreservedSegments();
    if (unreserved < 1) return 0;
    return Math.max(1, Math.min(wanted, Math.floor(unreserved / FALLBACK_SHARE_DIVISOR)));
  }

  /** Buffers kept from full guarantees while the fallback is on (half of them). */
  private fallbackReserve(): number {
    return Math.floor(
      this.networkBufferPool.totalNumberOfMemorySegments * FALLBACK_RESERVE_FRACTION,
    );
  }

  /**
   * The gate's way out when its remote channels' exclusive buffers cannot be guaranteed:
   * floating-only mode, reported once. `undefined` when the fallback is off (Flink's failure).
   */
  createExclusiveBuffersFallback(
    spec: GateBuffersSpec,
    poolName: string,
  ): ExclusiveBuffersFallback | undefined {
    if (!this.settings.exclusiveBuffersFallback) return undefined;
    const pool = this.networkBufferPool;
    return {
      reasonToFallBack: (exclusiveBuffers) => {
        const needed = exclusiveBuffers + spec.requiredFloatingBuffers;
        const unreserved = pool.getNumberOfUnreservedSegments();
        if (this.fitsInFull(needed)) return undefined;
        return (
          `its ${exclusiveBuffers} exclusive buffers ('taskmanager.network.memory.buffers-per-channel' = ` +
          `${spec.exclusiveBuffersPerChannel} per remote channel) and ${spec.requiredFloatingBuffers} ` +
          `floating ones need ${needed} network buffers, but only ${unreserved} of ` +
          `${pool.totalNumberOfMemorySegments} are not yet guaranteed to other pools ` +
          `(${this.fallbackReserve()} of them kept for the pools deployed later)`
        );
      },
      createFloatingOnlyBufferPool: () => {
        // Floating-only channels get credit only by backlog, one round trip per buffer: the
        // gate is guaranteed up to 'floating-buffers-per-gate' of them (at least 1), as far as
        // the memory not yet guaranteed allows, or it would crawl at one buffer per round trip.
        const floatingOnly = floatingOnlyGateBuffersSpec(
          spec,
          this.fallbackGuarantee(this.settings.floatingBuffersPerGate),
        );
        return pool.createBufferPool(
          floatingOnly.requiredFloatingBuffers,
          floatingOnly.totalFloatingBuffers,
          { name: poolName },
        );
      },
      onFallback: (gate, reason, floatingOnly) => {
        this.fallbacks++;
        emitBuffersFallbackWarning(
          `${gate} reads with floating buffers only, guaranteed ` +
            `${floatingOnly.getNumberOfRequiredMemorySegments()} of up to ` +
            `${floatingOnly.getMaxNumberOfMemorySegments()} floating buffers for its ` +
            `${gate.numberOfInputChannels} channels: ${reason}. It deploys, at some cost in ` +
            `throughput. Give the worker more network memory ('taskmanager.memory.network.min', ` +
            `'taskmanager.memory.network.max') or lower the parallelism; ` +
            `'taskmanager.network.memory.exclusive-buffers-fallback: false' fails instead.`,
        );
      },
    };
  }
}
