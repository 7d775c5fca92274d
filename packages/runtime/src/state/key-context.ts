/** The key the states of a backend are scoped to now (Flink's `KeyContext`). */
export interface KeyContext<K> {
  /**
   * The current key.
   *
   * @throws IllegalStateError when no key was set.
   */
  getCurrentKey(): K;
}
