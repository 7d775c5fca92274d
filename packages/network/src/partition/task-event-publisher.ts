import type { ResultPartitionID, TaskEvent } from "@sluice/core";
import type { TaskEventPublisher } from "@sluice/runtime-api";

/** A TaskEventPublisher with per-partition subscriptions (Flink's TaskEventDispatcher). */
export class TaskEventDispatcher implements TaskEventPublisher {
  private readonly listeners = new Map<string, Set<(event: TaskEvent) => void>>();

  /** Subscribes to events sent to `partitionId`; returns the unsubscribe function. */
  subscribe(partitionId: ResultPartitionID, listener: (event: TaskEvent) => void): () => void {
    const key = partitionId.toString();
    let set = this.listeners.get(key);
    if (set === undefined) {
      set = new Set();
      this.listeners.set(key, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(key);
    };
  }

  publish(partitionId: ResultPartitionID, event: TaskEvent): boolean {
    const set = this.listeners.get(partitionId.toString());
    if (set === undefined || set.size === 0) return false;
    for (const listener of set) listener(event);
    return true;
  }
}
