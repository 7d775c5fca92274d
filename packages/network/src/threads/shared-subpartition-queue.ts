import { IllegalArgumentError } from "@sluice/core";

/** What another thread attaches a {@link SharedSubpartitionQueue} with (shared, not copied). */
export interface SharedSubpartitionQueueHandle {
  readonly buffer: SharedArrayBuffer;
}

// Header words. Each group is written by one side only and sits on a cache line of its own, so
// the producer's and the consumer's writes do not invalidate each other's lines.
/** Producer's line: where it writes the next record, data records pushed, its backlog. */
const DATA_WRITE = 0;
const PUSHED_DATA = 1;
const BACKLOG = 2;
/** Set by the producer when a record did not fit: the consumer rings it once it made room. */
const WANTS_SPACE = 3;
/**
 * Set by the producer when it holds lent buffers and would wait for them: the consumer rings it
 * with its next return. While the producer is busy it takes the returns as it pushes, unrung.
 */
const WANTS_RETURNS = 4;
/** Producer's line: the next return entry it reads. */
const RETURN_READ = 16;
/** Consumer's line: where it reads the next record, data records popped. */
const DATA_READ = 32;
const POPPED_DATA = 33;
/** Set by the consumer when a return did not fit: the producer rings it once it read some. */
const WANTS_RETURN_SPACE = 34;
/**
 * Set by the consumer when it found the ring empty: the producer rings it with its next record.
 * While the consumer is busy reading it finds the records unrung.
 */
const WANTS_DATA = 35;
/** Consumer's line: the next return entry it writes, with {@link RETURNS_CLOSED}. */
const RETURN_WRITE = 48;
/** Written once, when the queue is made and attached. */
const PRODUCER_THREAD = 64;
const PRODUCER_ENDPOINT = 65;
const CONSUMER_THREAD = 66;
const CONSUMER_ENDPOINT = 67;
const DATA_WORDS = 68;
const RETURN_ENTRIES = 69;
/**
 * Set by the producer when its view was released: the consumer sees the release at once, ahead
 * of what is still queued (as a subpartition drops its queue on release). The cause follows, as
 * JSON of at most {@link RELEASE_CAUSE_BYTES} bytes.
 */
const RELEASED = 70;
const RELEASE_CAUSE_LENGTH = 71;
const RELEASE_CAUSE = 72;
const RELEASE_CAUSE_BYTES = 1024;
const HEADER_WORDS = RELEASE_CAUSE + RELEASE_CAUSE_BYTES / 4;

/** Return positions count modulo 2^30; bit 30 of RETURN_WRITE closes the returns. */
const RETURN_INDEX_MASK = 0x3fffffff;
const RETURNS_CLOSED = 0x40000000;
const RETURN_ENTRY_WORDS = 4;

/** A record's header, in words; inline bytes follow it, padded to a multiple of 8 bytes. */
const RECORD_HEADER_WORDS = 12;
const R_LENGTH = 0;
const R_KIND = 1;
const R_DATA_TYPE = 2;
/** The segment of a {@link RecordKind.REF}, the byte length of inline bytes. */
const R_SEGMENT_OR_BYTES = 3;
const R_OFFSET = 4;
const R_SIZE = 5;
const R_SEQUENCE = 6;
const R_BACKLOG = 7;
const R_ID = 8;
const R_FLAGS = 9;
const R_PARTIAL = 10;
const FLAG_COMPRESSED = 1;

/** What a record of the data queue carries. */
export const RecordKind = {
  /** A buffer of a shared segment, read in place and returned (no copy). */
  REF: 1,
  /** A buffer's bytes, copied (events, and buffers whose memory is not shared). */
  INLINE: 2,
  /** Skips to the start of the data area (a record never wraps). */
  PAD: 4,
} as const;

/** What the consumer sends back (Flink's consumer-to-producer messages, plus the recycle). */
export const ReturnKind = {
  /** A {@link RecordKind.REF} buffer was recycled: `id` and `segment` say which. */
  RECYCLE: 1,
  /** Flink's ResumeConsumption, after an aligned barrier. */
  RESUME: 2,
  /** Flink's NewBufferSize (buffer debloating): `value` bytes. */
  BUFFER_SIZE: 3,
  /** Flink's AckAllUserRecordsProcessed. */
  ACK_ALL: 4,
  /** The consumer released its view (its recycles may still follow). */
  RELEASE: 5,
} as const;

/** A record the consumer is looking at (one object, reused). */
export interface QueueRecord {
  kind: number;
  dataType: number;
  /** REF: the segment; otherwise the number of inline bytes. */
  segmentOrBytes: number;
  offset: number;
  size: number;
  sequenceNumber: number;
  backlog: number;
  id: number;
  compressed: boolean;
  partialRecordLength: number;
  /** Word where the inline bytes start. */
  inlineWord: number;
}

/** A return entry the producer reads (one object, reused). */
export interface ReturnEntry {
  kind: number;
  id: number;
  segment: number;
  value: number;
}

/** What {@link SharedSubpartitionQueue.pushReturn} did. */
export type PushReturnResult = "pushed" | "full" | "closed";

function powerOfTwoAtLeast(n: number): number {
  let p = 2;
  while (p < n) p *= 2;
  return p;
}

/**
 * The shared memory between the producer thread of one subpartition view and the consumer thread
 * that reads it (the cross-thread part of a local channel): a single-producer single-consumer
 * ring of records (buffers by reference to their segment, or copied inline), the producer's
 * release with its cause (seen at once, ahead of the queued records), and a ring of return
 * entries the other way (recycled buffers, and the consumer's
 * resume, buffer size, acknowledgement and release). Each side writes only its own positions
 * with a sequentially consistent store after the record or entry itself, so the other side sees
 * a whole record once it sees the position that covers it.
 *
 * Returns can be closed ({@link closeReturns}) by the consumer when the producer's thread died: a
 * return published before that is read by the closing side; one after it is refused, so the
 * consumer gives its segment's loan back itself, and no return is lost or handled twice.
 */
export class SharedSubpartitionQueue {
  readonly handle: SharedSubpartitionQueueHandle;
  private readonly words: Int32Array;
  private readonly bytes: Uint8Array;
  private readonly dataMask: number;
  private readonly dataWords: number;
  private readonly returnEntries: number;
  private readonly record: QueueRecord = {
    kind: 0,
    dataType: 0,
    segmentOrBytes: 0,
    offset: 0,
    size: 0,
    sequenceNumber: 0,
    backlog: 0,
    id: 0,
    compressed: false,
    partialRecordLength: 0,
    inlineWord: 0,
  };
  private readonly entry: ReturnEntry = { kind: 0, id: 0, segment: 0, value: 0 };

  private constructor(handle: SharedSubpartitionQueueHandle) {
    this.handle = handle;
    this.words = new Int32Array(handle.buffer);
    this.bytes = new Uint8Array(handle.buffer);
    this.dataWords = Atomics.load(this.words, DATA_WORDS);
    this.dataMask = this.dataWords - 1;
    this.returnEntries = Atomics.load(this.words, RETURN_ENTRIES);
  }

  /**
   * A queue whose data ring holds at least `dataBytes` (rounded up to a power of two) and whose
   * return ring holds `returnEntries` entries (see {@link setProducer} and {@link setConsumer}
   * for where each side is rung).
   */
  static create(dataBytes: number, returnEntries: number): SharedSubpartitionQueue {
    if (!Number.isInteger(dataBytes) || dataBytes < 4 * 2 * RECORD_HEADER_WORDS) {
      throw new IllegalArgumentError(
        `a queue's data ring needs at least two records, got ${dataBytes} bytes`,
      );
    }
    const dataWords = powerOfTwoAtLeast(Math.ceil(dataBytes / 4));
    const entries = powerOfTwoAtLeast(returnEntries);
    const buffer = new SharedArrayBuffer(
      4 * (HEADER_WORDS + dataWords + entries * RETURN_ENTRY_WORDS),
    );
    const words = new Int32Array(buffer);
    words[DATA_WORDS] = dataWords;
    words[RETURN_ENTRIES] = entries;
    words[PRODUCER_THREAD] = -1;
    words[PRODUCER_ENDPOINT] = -1;
    words[CONSUMER_THREAD] = -1;
    words[CONSUMER_ENDPOINT] = -1;
    return new SharedSubpartitionQueue({ buffer });
  }

  /** The queue `handle` describes, made on another thread. */
  static attach(handle: SharedSubpartitionQueueHandle): SharedSubpartitionQueue {
    return new SharedSubpartitionQueue(handle);
  }

  get producerThread(): number {
    return Atomics.load(this.words, PRODUCER_THREAD);
  }

  get producerEndpoint(): number {
    return Atomics.load(this.words, PRODUCER_ENDPOINT);
  }

  get consumerThread(): number {
    return Atomics.load(this.words, CONSUMER_THREAD);
  }

  get consumerEndpoint(): number {
    return Atomics.load(this.words, CONSUMER_ENDPOINT);
  }

  /** Where the consumer rings the producer. */
  setProducer(thread: number, endpoint: number): void {
    Atomics.store(this.words, PRODUCER_THREAD, thread);
    Atomics.store(this.words, PRODUCER_ENDPOINT, endpoint);
  }

  /** Where the producer rings the consumer. */
  setConsumer(thread: number, endpoint: number): void {
    Atomics.store(this.words, CONSUMER_THREAD, thread);
    Atomics.store(this.words, CONSUMER_ENDPOINT, endpoint);
  }

  /** The most inline bytes one record can carry. */
  get maxInlineBytes(): number {
    return 4 * (this.dataWords / 2 - RECORD_HEADER_WORDS);
  }

  // ----------------------------------------------------------------------------- producer

  /**
   * Appends a buffer of segment `segment` (bytes `[offset, offset + size)`) by reference; false
   * when the ring has no room (the consumer rings the producer once it has).
   */
  pushRef(
    dataType: number,
    segment: number,
    offset: number,
    size: number,
    sequenceNumber: number,
    backlog: number,
    id: number,
    compressed: boolean,
    partialRecordLength: number,
  ): boolean {
    const at = this.claim(RECORD_HEADER_WORDS);
    if (at < 0) return false;
    this.writeHeader(at, RECORD_HEADER_WORDS, RecordKind.REF, dataType, segment, sequenceNumber);
    const words = this.words;
    words[at + R_OFFSET] = offset;
    words[at + R_SIZE] = size;
    words[at + R_BACKLOG] = backlog;
    words[at + R_ID] = id;
    words[at + R_FLAGS] = compressed ? FLAG_COMPRESSED : 0;
    words[at + R_PARTIAL] = partialRecordLength;
    this.publish(RECORD_HEADER_WORDS, true);
    return true;
  }

  /**
   * Appends a {@link RecordKind.INLINE} record of `kind` with a copy of `payload`; false when the
   * ring has no room now. A data buffer counts in the backlog.
   *
   * @throws IllegalArgumentError when `payload` exceeds {@link maxInlineBytes}.
   */
  pushInline(
    kind: number,
    dataType: number,
    payload: Uint8Array,
    sequenceNumber: number,
    backlog: number,
    isData: boolean,
    compressed = false,
  ): boolean {
    if (payload.length > this.maxInlineBytes) {
      throw new IllegalArgumentError(
        `${payload.length} bytes do not fit into one record of a cross-thread queue (at most ${this.maxInlineBytes})`,
      );
    }
    const length = RECORD_HEADER_WORDS + 2 * Math.ceil(payload.length / 8);
    const at = this.claim(length);
    if (at < 0) return false;
    this.writeHeader(at, length, kind, dataType, payload.length, sequenceNumber);
    const words = this.words;
    words[at + R_BACKLOG] = backlog;
    words[at + R_FLAGS] = compressed ? FLAG_COMPRESSED : 0;
    this.bytes.set(payload, 4 * (at + RECORD_HEADER_WORDS));
    this.publish(length, isData);
    return true;
  }

  /**
   * The producer's view was released, with `cause` (its bytes, cut to what fits; empty for a
   * release without failure): the consumer sees it at once, whatever is still queued. Once only.
   */
  markReleased(cause: Uint8Array): void {
    if (Atomics.load(this.words, RELEASED) !== 0) return;
    const length = Math.min(cause.length, RELEASE_CAUSE_BYTES);
    this.bytes.set(cause.subarray(0, length), 4 * RELEASE_CAUSE);
    Atomics.store(this.words, RELEASE_CAUSE_LENGTH, length);
    Atomics.store(this.words, RELEASED, 1);
  }

  /** True once the producer released its view ({@link markReleased}). */
  isReleasedByProducer(): boolean {
    return Atomics.load(this.words, RELEASED) !== 0;
  }

  /** The bytes of the producer's release cause (empty for none); read after {@link isReleasedByProducer}. */
  releaseCause(): Uint8Array {
    const start = 4 * RELEASE_CAUSE;
    return this.bytes.slice(start, start + Atomics.load(this.words, RELEASE_CAUSE_LENGTH));
  }

  /** The producer's subpartition backlog (data buffers it did not push yet). */
  setBacklog(backlog: number): void {
    Atomics.store(this.words, BACKLOG, backlog);
  }

  /**
   * The next return entry, or `undefined` when none is there (the object is reused: read it
   * before the next call).
   */
  pollReturn(): ReturnEntry | undefined {
    const words = this.words;
    const read = Atomics.load(words, RETURN_READ);
    const write = Atomics.load(words, RETURN_WRITE) & RETURN_INDEX_MASK;
    if (read === write) return undefined;
    this.readEntry(read);
    Atomics.store(words, RETURN_READ, (read + 1) & RETURN_INDEX_MASK);
    return this.entry;
  }

  /** True (once) when the consumer could not return something for lack of room: ring it. */
  takeReturnSpaceWanted(): boolean {
    return Atomics.exchange(this.words, WANTS_RETURN_SPACE, 0) !== 0;
  }

  /** True (once) when the consumer found the ring empty since: ring it. */
  takeDataWanted(): boolean {
    return (
      Atomics.load(this.words, WANTS_DATA) !== 0 &&
      Atomics.exchange(this.words, WANTS_DATA, 0) !== 0
    );
  }

  /**
   * The producer will wait for returns (it holds lent buffers): the consumer's next return rings
   * it. True when a return came in meanwhile, which the caller reads now instead.
   */
  wantReturns(): boolean {
    const words = this.words;
    Atomics.store(words, WANTS_RETURNS, 1);
    // A return published before the flag was seen rings nobody: read it now.
    if (
      Atomics.load(words, RETURN_READ) !==
      (Atomics.load(words, RETURN_WRITE) & RETURN_INDEX_MASK)
    ) {
      Atomics.store(words, WANTS_RETURNS, 0);
      return true;
    }
    return false;
  }

  /**
   * Word `at` of the data area where `length` words go next, after a pad record when they do not
   * fit before its end; -1 (and the consumer asked to ring) when they do not fit now.
   */
  private claim(length: number): number {
    const words = this.words;
    const write = Atomics.load(words, DATA_WRITE);
    const read = Atomics.load(words, DATA_READ);
    const used = (write - read) | 0;
    const at = write & this.dataMask;
    const tail = this.dataWords - at;
    const needed = tail < length ? tail + length : length;
    if (this.dataWords - used < needed) {
      Atomics.store(words, WANTS_SPACE, 1);
      // The consumer may have made room just before the flag.
      if (this.dataWords - ((write - Atomics.load(words, DATA_READ)) | 0) < needed) return -1;
      Atomics.store(words, WANTS_SPACE, 0);
    }
    if (tail < length) {
      words[HEADER_WORDS + at + R_LENGTH] = tail;
      words[HEADER_WORDS + at + R_KIND] = RecordKind.PAD;
      Atomics.store(words, DATA_WRITE, (write + tail) | 0);
      return HEADER_WORDS;
    }
    return HEADER_WORDS + at;
  }

  private writeHeader(
    at: number,
    length: number,
    kind: number,
    dataType: number,
    segmentOrBytes: number,
    sequenceNumber: number,
  ): void {
    const words = this.words;
    words[at + R_LENGTH] = length;
    words[at + R_KIND] = kind;
    words[at + R_DATA_TYPE] = dataType;
    words[at + R_SEGMENT_OR_BYTES] = segmentOrBytes;
    words[at + R_SEQUENCE] = sequenceNumber;
  }

  private publish(length: number, isData: boolean): void {
    const words = this.words;
    if (isData) Atomics.add(words, PUSHED_DATA, 1);
    Atomics.store(words, DATA_WRITE, (Atomics.load(words, DATA_WRITE) + length) | 0);
  }

  // ----------------------------------------------------------------------------- consumer

  /**
   * The record at the head, or `undefined` when the ring is empty; then, with `wantData`, the
   * producer rings the consumer with its next record (the object is reused).
   */
  peek(wantData = false): QueueRecord | undefined {
    const words = this.words;
    for (;;) {
      const read = Atomics.load(words, DATA_READ);
      if (read === Atomics.load(words, DATA_WRITE)) {
        if (!wantData) return undefined;
        Atomics.store(words, WANTS_DATA, 1);
        // A record published before the flag was seen rings nobody: look again.
        if (read === Atomics.load(words, DATA_WRITE)) return undefined;
        Atomics.store(words, WANTS_DATA, 0);
        wantData = false;
        continue;
      }
      const at = HEADER_WORDS + (read & this.dataMask);
      if (words[at + R_KIND] === RecordKind.PAD) {
        Atomics.store(words, DATA_READ, (read + (words[at + R_LENGTH] as number)) | 0);
        continue;
      }
      const record = this.record;
      record.kind = words[at + R_KIND] as number;
      record.dataType = words[at + R_DATA_TYPE] as number;
      record.segmentOrBytes = words[at + R_SEGMENT_OR_BYTES] as number;
      record.offset = words[at + R_OFFSET] as number;
      record.size = words[at + R_SIZE] as number;
      record.sequenceNumber = words[at + R_SEQUENCE] as number;
      record.backlog = words[at + R_BACKLOG] as number;
      record.id = words[at + R_ID] as number;
      record.compressed = ((words[at + R_FLAGS] as number) & FLAG_COMPRESSED) !== 0;
      record.partialRecordLength = words[at + R_PARTIAL] as number;
      record.inlineWord = at + RECORD_HEADER_WORDS;
      return record;
    }
  }

  /** A view of the inline bytes of the record {@link peek} returned (valid until {@link pop}). */
  inlineBytes(record: QueueRecord): Uint8Array {
    const start = 4 * record.inlineWord;
    return this.bytes.subarray(start, start + record.segmentOrBytes);
  }

  /**
   * Removes the head record; `isData` says whether it counted in the backlog. True when the
   * producer waits for room: ring it.
   */
  pop(isData: boolean): boolean {
    const words = this.words;
    const read = Atomics.load(words, DATA_READ);
    const at = HEADER_WORDS + (read & this.dataMask);
    if (isData) Atomics.add(words, POPPED_DATA, 1);
    Atomics.store(words, DATA_READ, (read + (words[at + R_LENGTH] as number)) | 0);
    return Atomics.load(words, WANTS_SPACE) !== 0 && Atomics.exchange(words, WANTS_SPACE, 0) !== 0;
  }

  /** Data buffers pushed and not yet popped, plus the producer's own backlog. */
  getBacklog(): number {
    const words = this.words;
    const queued = (Atomics.load(words, PUSHED_DATA) - Atomics.load(words, POPPED_DATA)) | 0;
    return queued + Atomics.load(words, BACKLOG);
  }

  /** Data buffers pushed and not yet popped. */
  getNumberOfQueuedData(): number {
    return (Atomics.load(this.words, PUSHED_DATA) - Atomics.load(this.words, POPPED_DATA)) | 0;
  }

  /**
   * Sends a return entry to the producer: `full` when its ring has no room now (the producer
   * rings the consumer once it has), `closed` once {@link closeReturns} was called.
   */
  pushReturn(kind: number, id: number, segment: number, value: number): PushReturnResult {
    const words = this.words;
    const state = Atomics.load(words, RETURN_WRITE);
    if ((state & RETURNS_CLOSED) !== 0) return "closed";
    const write = state & RETURN_INDEX_MASK;
    const used = (write - Atomics.load(words, RETURN_READ)) & RETURN_INDEX_MASK;
    if (used >= this.returnEntries) {
      Atomics.store(words, WANTS_RETURN_SPACE, 1);
      // The producer may have read returns just before the flag, and then rings nobody.
      if (((write - Atomics.load(words, RETURN_READ)) & RETURN_INDEX_MASK) >= this.returnEntries) {
        return "full";
      }
      Atomics.store(words, WANTS_RETURN_SPACE, 0);
    }
    const at = this.entryWord(write);
    words[at] = kind;
    words[at + 1] = id;
    words[at + 2] = segment;
    words[at + 3] = value;
    // Fails only when the returns were closed meanwhile: then the entry was never published.
    const next = (write + 1) & RETURN_INDEX_MASK;
    return Atomics.compareExchange(words, RETURN_WRITE, state, next) === state
      ? "pushed"
      : "closed";
  }

  /** True (once) when the producer asked to be rung for returns since: ring it. */
  takeReturnsWanted(): boolean {
    return (
      Atomics.load(this.words, WANTS_RETURNS) !== 0 &&
      Atomics.exchange(this.words, WANTS_RETURNS, 0) !== 0
    );
  }

  /**
   * Closes the returns (the producer's thread is gone) and calls `handle` with every entry
   * published before, which that thread never read. Later {@link pushReturn}s say `closed`.
   */
  closeReturns(handle: (entry: ReturnEntry) => void): void {
    const words = this.words;
    const state = Atomics.or(words, RETURN_WRITE, RETURNS_CLOSED);
    if ((state & RETURNS_CLOSED) !== 0) return;
    const write = state & RETURN_INDEX_MASK;
    for (let read = Atomics.load(words, RETURN_READ); read !== write; ) {
      this.readEntry(read);
      handle(this.entry);
      read = (read + 1) & RETURN_INDEX_MASK;
      Atomics.store(words, RETURN_READ, read);
    }
  }

  private readEntry(position: number): void {
    const at = this.entryWord(position);
    const words = this.words;
    const entry = this.entry;
    entry.kind = words[at] as number;
    entry.id = words[at + 1] as number;
    entry.segment = words[at + 2] as number;
    entry.value = words[at + 3] as number;
  }

  private entryWord(position: number): number {
    return (
      HEADER_WORDS + this.dataWords + (position & (this.returnEntries - 1)) * RETURN_ENTRY_WORDS
    );
  }
}
