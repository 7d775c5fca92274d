/**
 * What one `getNextRecord` call achieved (Flink's RecordDeserializer.DeserializationResult): did
 * it produce a full record, and is the current buffer used up (so the caller must supply the next
 * one before asking again)? The three instances are the only ones; compare by identity or use
 * the predicates.
 */
export class DeserializationResult {
  /** No record yet; the buffer is used up (a record continues in the next buffer). */
  static readonly PARTIAL_RECORD = new DeserializationResult("PARTIAL_RECORD", false, true);
  /** A record; the buffer holds more bytes — call again. */
  static readonly INTERMEDIATE_RECORD_FROM_BUFFER = new DeserializationResult(
    "INTERMEDIATE_RECORD_FROM_BUFFER",
    true,
    false,
  );
  /** A record, and it ended exactly at the buffer's end: the buffer is used up. */
  static readonly LAST_RECORD_FROM_BUFFER = new DeserializationResult(
    "LAST_RECORD_FROM_BUFFER",
    true,
    true,
  );

  private constructor(
    /** The Flink name of this result. */
    readonly name: string,
    private readonly fullRecord: boolean,
    private readonly bufferConsumed: boolean,
  ) {}

  /** True when the call produced a record. */
  isFullRecord(): boolean {
    return this.fullRecord;
  }

  /** True when the current buffer is used up (and was recycled); feed the next one. */
  isBufferConsumed(): boolean {
    return this.bufferConsumed;
  }

  toString(): string {
    return this.name;
  }
}
