/**
 * The one timer of a connection's read deadlines (an idle timeout, a frame read timeout): it calls
 * its owner's check when the nearest deadline is due, and again, on request, once the bytes that
 * waited in the socket were read.
 *
 * A timer can find a deadline passed that the peer met. After a stall of this event loop (a long
 * task, a slow host), libuv's timers phase runs before its poll phase reads what the peer sent
 * during the stall. So a check that finds a deadline passed calls {@link confirmAfterPoll} and
 * decides in the check phase, which comes after the poll phase.
 */
export class ReadDeadlineWatchdog {
  private readonly check: (afterPoll: boolean) => void;
  private timer: NodeJS.Timeout | undefined;
  private confirmation: NodeJS.Immediate | undefined;

  /**
   * @param check - looks at the owner's deadlines: `afterPoll` is false when the timer fired,
   *   true when called by {@link confirmAfterPoll}. It re-arms the watchdog if it keeps watching.
   */
  constructor(check: (afterPoll: boolean) => void) {
    this.check = check;
  }

  /**
   * Calls the check in `delayMs` (at least 1 ms), replacing what was armed or pending. The timer
   * is unref'd: it never keeps a process alive.
   */
  arm(delayMs: number): void {
    this.stop();
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.check(false);
      },
      Math.max(1, Math.ceil(delayMs)),
    );
    this.timer.unref();
  }

  /** Calls the check again, with `afterPoll` true, once this turn's poll phase read the sockets. */
  confirmAfterPoll(): void {
    this.stop();
    this.confirmation = setImmediate(() => {
      this.confirmation = undefined;
      this.check(true);
    });
    this.confirmation.unref();
  }

  /** Cancels what was armed or pending. */
  stop(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.confirmation !== undefined) clearImmediate(this.confirmation);
    this.confirmation = undefined;
  }
}
