/**
 * Watches for a peer's heartbeats (Flink's `HeartbeatMonitor`): each {@link received} restarts the
 * timer; when `heartbeat.timeout` passes without one, `onTimeout` runs once. The timer is unref'd,
 * so a monitor never keeps a process alive by itself.
 */
export class HeartbeatMonitor {
  private timer: NodeJS.Timeout | undefined;
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
    clearTimeout(this.timer);
  }

  private arm(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.stopped = true;
      this.onTimeout(Date.now() - this.lastHeartbeat);
    }, this.timeoutMs);
    this.timer.unref();
  }
}
