import type { CheckpointIDCounter } from "@sluice/runtime-api";

/**
 * The checkpoint ids of a job that no high-availability store keeps (Flink's
 * `StandaloneCheckpointIDCounter`): a counter in this process, starting at 1. What a
 * `CheckpointCoordinator` counts with when it is given no other counter.
 */
export class StandaloneCheckpointIDCounter implements CheckpointIDCounter {
  private next = 1n;

  async getAndIncrement(): Promise<bigint> {
    return this.next++;
  }

  async get(): Promise<bigint> {
    return this.next;
  }

  async setCount(next: bigint): Promise<void> {
    this.next = next;
  }

  async shutdown(): Promise<void> {}
}
