import { InsufficientBuffersError, LimitExceededError } from "@sluice/core";

/** One push waiting for its sort buffers, or holding them. */
export interface PushTicket {
  /** The producer's host: what the per-peer bound and the fair order count by. */
  readonly peer: string;
  /** Sort buffers (network segments) the partition is guaranteed once admitted. */
  readonly segments: number;
}

interface Waiting {
  readonly ticket: PushTicket;
  readonly admit: () => void;
  readonly timer: NodeJS.Timeout;
}

/** What the admission needs of its worker. */
export interface PushAdmissionOptions {
  /** `remote-shuffle.worker.max-push-sessions-per-peer`. */
  readonly maxSessionsPerPeer: number;
  /** How long a push waits for sort buffers (twice `remote-shuffle.worker.push-session.idle-timeout`). */
  readonly maxWaitMs: number;
  /** Segments of the worker's network memory that no partition is guaranteed yet. */
  readonly unreservedSegments: () => number;
  /** All segments of the worker's network memory. */
  readonly totalSegments: number;
  /** How errors name the worker. */
  readonly name: () => string;
}

/**
 * Decides when a push session may take its sort buffers on a shuffle worker. A partition being
 * pushed holds `taskmanager.network.sort-shuffle.min-buffers` of the worker's writing memory; when
 * they are not free, its OPEN waits (the producer is back-pressured) instead of failing, and the
 * next free buffers go to the waiting push of the peer that holds the fewest sessions (then the
 * oldest), so one producer host cannot starve the others. A peer has at most
 * `remote-shuffle.worker.max-push-sessions-per-peer` sessions, open or waiting; a push that waits
 * longer than twice the idle timeout (when every idle session has ended) fails with `SLUICE_ERR_INSUFFICIENT_BUFFERS`, so tasks that wait
 * on each other's partitions fail and restart rather than hang.
 */
export class PushAdmission {
  private readonly waiting: Waiting[] = [];
  private readonly heldByPeer = new Map<string, number>();
  private readonly waitingByPeer = new Map<string, number>();

  constructor(private readonly options: PushAdmissionOptions) {}

  /** Pushes waiting for sort buffers. */
  get numberOfWaiting(): number {
    return this.waiting.length;
  }

  /**
   * Asks for `ticket`'s buffers: `admit` runs once they are free (maybe at once), `fail` when
   * the push cannot be admitted (never both).
   *
   * @throws LimitExceededError when the peer has its most sessions already.
   * @throws InsufficientBuffersError when the partition needs more than the worker has at all.
   */
  request(ticket: PushTicket, admit: () => void, fail: (error: Error) => void): void {
    const { maxSessionsPerPeer, totalSegments } = this.options;
    const sessions = count(this.heldByPeer, ticket.peer) + count(this.waitingByPeer, ticket.peer);
    if (sessions >= maxSessionsPerPeer) {
      throw new LimitExceededError(
        `${this.options.name()}: ${ticket.peer} already has ${sessions} push sessions, open or waiting ('remote-shuffle.worker.max-push-sessions-per-peer' = ${maxSessionsPerPeer})`,
      );
    }
    if (ticket.segments > totalSegments) {
      throw new InsufficientBuffersError(
        `${this.options.name()}: a pushed partition needs ${ticket.segments} sort buffers ('taskmanager.network.sort-shuffle.min-buffers'), but the worker has ${totalSegments} in all ('remote-shuffle.worker.memory.writing-size')`,
      );
    }
    const timer = setTimeout(() => {
      if (!this.remove(entry)) return;
      fail(
        new InsufficientBuffersError(
          `${this.options.name()}: no sort buffers for a push from ${ticket.peer} within ${this.options.maxWaitMs} ms (twice 'remote-shuffle.worker.push-session.idle-timeout'): every one of the ${totalSegments} ('remote-shuffle.worker.memory.writing-size') is held by partitions being pushed`,
        ),
      );
    }, this.options.maxWaitMs);
    timer.unref();
    const entry: Waiting = { ticket, admit, timer };
    this.waiting.push(entry);
    add(this.waitingByPeer, ticket.peer, 1);
    this.pump();
  }

  /** A waiting push went away (its connection closed). */
  cancel(ticket: PushTicket): void {
    const entry = this.waiting.find((w) => w.ticket === ticket);
    if (entry !== undefined) this.remove(entry);
  }

  /**
   * An admitted push ended (stored or abandoned). Its buffers may return a little later (after
   * its last file operation), so the caller calls {@link PushAdmission.pump} again then.
   */
  release(ticket: PushTicket): void {
    add(this.heldByPeer, ticket.peer, -1);
    this.pump();
  }

  /** Admits what fits now, fairly. */
  pump(): void {
    while (this.waiting.length > 0) {
      const next = this.next();
      if (next.ticket.segments > this.options.unreservedSegments()) return;
      this.remove(next);
      add(this.heldByPeer, next.ticket.peer, 1);
      next.admit();
    }
  }

  /** The waiting push of the peer that holds the fewest sessions; the oldest of those. */
  private next(): Waiting {
    let best = this.waiting[0] as Waiting;
    let fewest = count(this.heldByPeer, best.ticket.peer);
    for (const entry of this.waiting) {
      const held = count(this.heldByPeer, entry.ticket.peer);
      if (held < fewest) {
        best = entry;
        fewest = held;
      }
    }
    return best;
  }

  private remove(entry: Waiting): boolean {
    const index = this.waiting.indexOf(entry);
    if (index < 0) return false;
    this.waiting.splice(index, 1);
    clearTimeout(entry.timer);
    add(this.waitingByPeer, entry.ticket.peer, -1);
    return true;
  }
}

function count(map: Map<string, number>, key: string): number {
  return map.get(key) ?? 0;
}

function add(map: Map<string, number>, key: string, delta: number): void {
  const next = count(map, key) + delta;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}
