/**
 * Extracts the key from a record, as Flink's `KeySelector`. It must be deterministic: the same
 * record must always yield an equal key, or records of one key would be spread over channels.
 */
export type KeySelector<T, K> = (record: T) => K;
