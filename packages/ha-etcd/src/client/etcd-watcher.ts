import type { HighAvailabilityUnavailableError } from "@sluice/runtime-api";
import type { EtcdClient, EtcdStream } from "./etcd-client.js";
import {
  decodeWatchMessage,
  encodeWatchCreate,
  gatewayErrorOf,
  parseJson,
  refusesAuthToken,
  type WatchEvent,
  type WatchMessage,
} from "./gateway-json.js";
import type { KeyRange } from "./kv-requests.js";

/** The first pause before a broken watch is created again; it doubles up to the maximum. */
const MIN_RETRY_MS = 100;
const MAX_RETRY_MS = 2000;

/** What a watch tells its owner. */
export interface WatchListener {
  /** Changes of the watched range, in revision order. */
  onEvents(events: readonly WatchEvent[]): void;
  /**
   * Changes may have been missed: etcd compacted the revisions since the last one seen. The
   * owner reads the state again; the watch goes on from the oldest revision etcd still has.
   */
  onResync(): void;
  /**
   * The watch ended for good (a malformed answer, or etcd cancelled it); never after
   * {@link EtcdWatcher.close}.
   */
  onError(error: HighAvailabilityUnavailableError): void;
}

/** What {@link EtcdWatcher} watches and whom it tells. */
export interface EtcdWatcherOptions {
  /** The operation a failure names ("watching the job managers' election"). */
  readonly what: string;
  readonly range: KeyRange;
  /** The first revision whose changes are reported. */
  readonly startRevision: string;
  readonly listener: WatchListener;
  /**
   * A stream that sent nothing for this long is created again (default: the client's request
   * timeout), so that a connection that died without a reset (a host gone) is noticed.
   */
  readonly idleTimeoutMs?: number;
}

/**
 * A watch of a key range over the gateway's streaming `/v3/watch`: one HTTP request per watch,
 * its answer a stream of JSON lines, each bounded by the client's `maxResponseBytes` (nothing
 * more is buffered). When the stream breaks (etcd restarted, a connection cut, or silence for
 * the idle timeout) the watch is created again from the next revision it has not reported, on
 * any endpoint, after a pause that doubles from 100 ms to 2 s, so that no change is lost or told
 * twice; as etcd's Go client does, a progress message moves that revision on too.
 */
export class EtcdWatcher {
  private nextRevision: string;
  private stream: EtcdStream | undefined;
  private closed = false;
  /** etcd created the watch once: later failures are reported, not thrown from start(). */
  private started = false;
  private retryMs = MIN_RETRY_MS;
  /** etcd cancelled the last watch for its auth token. */
  private tokenRefused = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly idleTimeoutMs: number;

  constructor(
    private readonly client: EtcdClient,
    private readonly namespace: string,
    private readonly options: EtcdWatcherOptions,
  ) {
    this.nextRevision = options.startRevision;
    this.idleTimeoutMs = options.idleTimeoutMs ?? client.requestTimeoutMs;
  }

  /**
   * Creates the watch; resolves once etcd confirmed it.
   *
   * @throws HighAvailabilityUnavailableError naming the operation when etcd cannot be reached or
   *   refuses the watch.
   */
  async start(): Promise<void> {
    this.tokenRefused = false;
    try {
      await this.open();
    } catch (error) {
      // A token etcd forgot since the client fetched it: once more, with a new one.
      if (!this.tokenRefused || this.closed) throw error;
      await this.open();
    }
  }

  /** Ends the watch; nothing is reported after. Idempotent. */
  close(): void {
    this.closed = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.idleTimer);
    this.stream?.destroy();
    this.stream = undefined;
  }

  /** Opens one stream; resolves when etcd created the watch, rejects if it ends before. */
  private async open(): Promise<void> {
    const stream = await this.client.stream(
      this.options.what,
      "/v3/watch",
      encodeWatchCreate(this.namespace, this.options.range, this.nextRevision),
    );
    if (this.closed) {
      stream.destroy();
      return;
    }
    this.stream = stream;
    await new Promise<void>((resolve, reject) => {
      let created = false;
      let ended = false;
      const end = (error: HighAvailabilityUnavailableError | undefined, fatal: boolean) => {
        if (ended) return;
        ended = true;
        clearTimeout(this.idleTimer);
        stream.destroy();
        if (this.stream === stream) this.stream = undefined;
        if (this.closed) {
          resolve();
          return;
        }
        const failure =
          error ??
          this.client.unavailable(
            this.options.what,
            `the watch stream from ${stream.endpoint} ended`,
          );
        if (fatal && (created || this.started)) {
          // Reported once; the watch is over.
          this.close();
          resolve();
          this.options.listener.onError(failure);
        } else if (!created) {
          // start() fails; a reconnect tries again.
          reject(failure);
        } else {
          this.reconnect();
        }
      };
      const fail = (reason: string, cause?: unknown) =>
        this.client.unavailable(this.options.what, `${reason} (from ${stream.endpoint})`, cause);
      const onMessage = (message: WatchMessage) => {
        if (message.canceled) {
          if (refusesAuthToken(message.cancelReason)) {
            // etcd no longer knows the token (it expired, or etcd forgot it): created again, with
            // a new token.
            stream.tokenRefused();
            this.tokenRefused = true;
            end(fail(`etcd refused the auth token: ${message.cancelReason}`), false);
            return;
          }
          if (message.compactRevision === "0") {
            end(
              fail(`etcd cancelled the watch: ${message.cancelReason || "no reason given"}`),
              true,
            );
            return;
          }
          // The revisions since the last one reported are gone: go on from the oldest kept, and
          // let the owner read the state again.
          this.nextRevision = message.compactRevision;
          if (!created) {
            created = true;
            this.started = true;
            resolve();
          }
          end(undefined, false);
          this.options.listener.onResync();
          return;
        }
        const last = message.events.at(-1);
        if (last !== undefined) {
          this.advance((BigInt(last.kv.modRevision) + 1n).toString());
        } else if (!message.created) {
          // A progress notification: etcd sends them only to a watch that has every change up
          // to its revision. (An answer with events may be one batch of a longer replay, so its
          // header says nothing.)
          this.advance((BigInt(message.revision) + 1n).toString());
        }
        if (message.created && !created) {
          created = true;
          this.started = true;
          this.retryMs = MIN_RETRY_MS;
          resolve();
        }
        if (message.events.length > 0) this.options.listener.onEvents(message.events);
      };
      /** Decodes one line; `undefined` when the stream was ended because of it. */
      const decode = (line: string): WatchMessage | undefined => {
        try {
          const json = parseJson(line);
          const error = gatewayErrorOf(json);
          if (error !== undefined) {
            // etcd ended the stream (a member stopping, a lost raft leader): create it again.
            end(fail(`etcd ended the watch: ${error.message}`, error), false);
            return undefined;
          }
          return decodeWatchMessage(json, this.namespace);
        } catch (error) {
          end(fail(`malformed watch answer: ${(error as Error).message}`, error), true);
          return undefined;
        }
      };
      const touch = () => {
        clearTimeout(this.idleTimer);
        this.idleTimer = setTimeout(() => end(undefined, false), this.idleTimeoutMs);
        this.idleTimer.unref();
      };
      touch();
      const limit = this.client.maxResponseBytes;
      let parts: Buffer[] = [];
      let size = 0;
      const tooLong = (length: number) =>
        end(
          fail(
            `malformed watch answer: a line of ${length} bytes or more is larger than the limit of ${limit} bytes`,
          ),
          true,
        );
      stream.response.on("data", (chunk: Buffer) => {
        if (ended) return;
        touch();
        let start = 0;
        for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
          const piece = chunk.subarray(start, nl);
          start = nl + 1;
          if (size + piece.length > limit) return tooLong(size + piece.length);
          parts.push(piece);
          const line = Buffer.concat(parts, size + piece.length)
            .toString("utf8")
            .trim();
          parts = [];
          size = 0;
          if (line === "") continue;
          const message = decode(line);
          if (message === undefined) return;
          onMessage(message);
          if (ended) return;
        }
        const rest = chunk.subarray(start);
        if (size + rest.length > limit) return tooLong(size + rest.length);
        parts.push(rest);
        size += rest.length;
      });
      stream.response.on("error", () => end(undefined, false));
      stream.response.on("close", () => end(undefined, false));
    });
  }

  private advance(revision: string): void {
    if (BigInt(revision) > BigInt(this.nextRevision)) this.nextRevision = revision;
  }

  /** Creates the watch again after a pause; retried (with a longer pause) until it works. */
  private reconnect(): void {
    if (this.closed) return;
    if (this.client.closed) {
      this.close();
      return;
    }
    clearTimeout(this.retryTimer);
    const delay = this.retryMs;
    this.retryMs = Math.min(MAX_RETRY_MS, this.retryMs * 2);
    this.retryTimer = setTimeout(() => {
      this.open().catch(() => this.reconnect());
    }, delay);
    this.retryTimer.unref();
  }
}
