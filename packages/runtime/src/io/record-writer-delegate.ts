import { AVAILABLE, allOf, IllegalArgumentError, type RuntimeEvent } from "@sluice/core";
import type { RecordWriter } from "./record-writer.js";

/**
 * The outputs of one task (Flink's RecordWriterDelegate): none, one, or several writers with a
 * combined availability (available only when every output is).
 */
export class RecordWriterDelegate<T> {
  private readonly writers: readonly RecordWriter<T>[];

  constructor(writers: readonly RecordWriter<T>[]) {
    this.writers = writers;
  }

  getRecordWriter(index: number): RecordWriter<T> {
    const writer = this.writers[index];
    if (writer === undefined) {
      throw new IllegalArgumentError(
        `no record writer ${index} (the task has ${this.writers.length})`,
      );
    }
    return writer;
  }

  get numberOfWriters(): number {
    return this.writers.length;
  }

  /** Emits `record` through every output. */
  emit(record: T): void {
    for (const writer of this.writers) writer.emit(record);
  }

  broadcastEvent(event: RuntimeEvent, isPriority = false): void {
    for (const writer of this.writers) writer.broadcastEvent(event, isPriority);
  }

  isAvailable(): boolean {
    for (const writer of this.writers) if (!writer.isAvailable()) return false;
    return true;
  }

  getAvailableFuture(): Promise<void> {
    if (this.writers.length === 0) return AVAILABLE;
    if (this.writers.length === 1) return (this.writers[0] as RecordWriter<T>).getAvailableFuture();
    return allOf(this.writers.map((w) => w.getAvailableFuture()));
  }

  close(): void {
    for (const writer of this.writers) writer.close();
  }
}
