/**
 * Watches for a peer's heartbeats (Flink's `HeartbeatMonitor`): each {@link received} restarts the
 * timer; when `heartbeat.timeout` passes without one, `onTimeout` runs once. The timer is unref'd,
 * so a monitor never keeps a process alive by itself.
 *
 * A due timer is a verdict only once the event loop's poll phase read what had arrived: after a
 * stall of this event loop (a long task, a slow host), the timers phase runs before the poll phase
 * reads the heartbeats the peer sent during the stall, so the check phase (`setImmediate`), which
 * follows the poll phase, looks again.
 */
export class HeartbeatMonitor {
  private timer: NodeJS.Timeout | undefined;
  private confirmation: NodeJS.Immediate | undefined;
  private lastHeartbeat = Date.now();
  private stopped = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly onTimeout: (silentForMs: number) => void,
  ) {
    this.arm();
  }

  /** A heartbeat (or its answer) arrived from the peer. */
  received(): void {
    if (this.stopped) return;
    this.lastHeartbeat = Date.now();
    this.arm();
  }

  /** Stops watching; `onTimeout` will not run. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.disarm();
  }

  private disarm(): void {
    clearTimeout(this.timer);
    if (this.confirmation !== undefined) clearImmediate(this.confirmation);
    this.confirmation = undefined;
  }

  private arm(): void {
    this.disarm();
    this.timer = setTimeout(() => {
      // A heartbeat read in the poll phase re-arms the monitor, which cancels this.
      this.confirmation = setImmediate(() => {
        this.confirmation = undefined;
        this.stopped = true;
        this.onTimeout(Date.now() - this.lastHeartbeat);
      });
      this.confirmation.unref();
    }, this.timeoutMs);
    this.timer.unref();
  }
}
