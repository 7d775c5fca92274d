import type { RuntimeEvent } from "@sluice/core";

/**
 * Where a task's checkpoint coordinator sends barriers and cancellation markers: each of the
 * task's outputs (a RecordWriter in the running task). The checkpointing layer owns this small
 * interface so that it needs nothing of the writers' record path, only their event broadcast.
 */
export interface CheckpointEventEmitter {
  /**
   * Sends `event` to every channel of the output and flushes it at once; a priority event
   * (an unaligned barrier) overtakes the data queued before it.
   */
  broadcastEvent(event: RuntimeEvent, isPriority?: boolean): void;
}
