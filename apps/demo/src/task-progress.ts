/** The two operators of the word count. */
export type TaskKind = "source" | "count";

/** A task's live counters, as a task manager reports them to the job manager. */
export interface TaskProgress {
  readonly name: string;
  readonly kind: TaskKind;
  readonly subtaskIndex: number;
  /** Records emitted (sources) or received (counters). */
  readonly records: number;
  /** Bytes out of the partition (sources) or into the gate (counters). */
  readonly bytes: number;
  /** outPoolUsage (sources) or inPoolUsage (counters), in [0, 1]. */
  readonly poolUsage: number;
  /** Time the source waited for its back-pressured partition. */
  readonly backPressuredTimeMs: number;
  readonly finished: boolean;
}
