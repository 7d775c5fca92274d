import {
  deferred,
  IllegalStateError,
  LimitExceededError,
  ProtocolError,
  RemoteTransportError,
  TimeoutError,
} from "@sluice/core";
import type { SerializedThrowable } from "@sluice/runtime";
import { deserializeThrowable, serializeThrowable } from "@sluice/runtime/plugin";
import {
  createJSONRPCErrorResponse,
  JSONRPCClient,
  JSONRPCErrorCode,
  JSONRPCErrorException,
  type JSONRPCResponse,
  JSONRPCServer,
  JSONRPCServerAndClient,
} from "json-rpc-2.0";
import type { RawData, WebSocket } from "ws";
import * as z from "zod";
import type { MethodSpec, MethodTable } from "./method-spec.js";

/** How often a connection paused for its outbound budget looks whether it drained. */
const DRAIN_CHECK_MS = 20;

/** JSON-RPC's range for application errors: a handler threw (the `data` says what). */
const APPLICATION_ERROR = -32000;

const serializedThrowable = z.object({
  name: z.string(),
  code: z.string().optional(),
  message: z.string(),
  stack: z.string().optional(),
  partitionId: z.string().max(256).optional(),
});

/** The part of a JSON-RPC request a middleware sees. */
interface IncomingRequest {
  readonly method: string;
  readonly id?: unknown;
}

/** A handler for one method of the local table: gets the checked params. */
type Handler<M extends MethodSpec> = (
  params: z.output<M["params"]>,
) => z.input<M["result"]> | Promise<z.input<M["result"]>>;

/** Options of an {@link RpcPeer}. */
export interface RpcPeerOptions<Local extends MethodTable, Remote extends MethodTable> {
  /** The open WebSocket. */
  readonly socket: WebSocket;
  /** The methods this side offers; requests for others get "method not found". */
  readonly local: Local;
  /** The methods the other side offers. */
  readonly remote: Remote;
  /** Who the other side is, for messages (may be refined later with {@link RpcPeer.label}). */
  readonly label: string;
  /** How long a call waits for its reply. */
  readonly requestTimeoutMs: number;
  /**
   * Told about input that could not be answered: a malformed notification or response, a frame
   * that is not JSON-RPC, and a notification whose handler failed (there is nobody to reply to).
   * Requests always get an error reply as well.
   */
  readonly onProtocolError: (error: Error) => void;
  /**
   * The largest message accepted now, checked on its length before it is parsed (it may shrink
   * or grow over the connection's life, e.g. at registration); a larger one closes the
   * connection with 1009 and a LimitExceededError naming `key`. Default: only the WebSocket's
   * own `maxPayload`.
   */
  readonly maxMessageSize?: () => Limit;
  /**
   * The outbound budget: bytes sent and not yet taken by the socket. At the budget the peer is
   * no longer read from (its requests would only add replies) until half of it drained; beyond
   * twice the budget the connection is closed. Default: unbounded.
   */
  readonly maxOutboundBytes?: Limit;
  /**
   * How many of the peer's requests and notifications are handled at once; at the limit the
   * peer is no longer read from until one finished. Default: unbounded.
   */
  readonly maxConcurrentRequests?: Limit;
}

/** A limit of a connection and the configuration key that sets it. */
export interface Limit {
  readonly value: number;
  readonly key: string;
}

/**
 * One end of a control-plane connection: JSON-RPC 2.0 in both directions over one WebSocket
 * (`json-rpc-2.0` does the framing, ids and matching of replies). Every request's params and
 * every reply are checked against the method's schema on receipt; a request that fails the check,
 * names an unknown method or is not JSON at all gets an error reply naming what was wrong, and the
 * receiver carries on. Errors cross as `SerializedThrowable`, so their codes survive.
 */
export class RpcPeer<Local extends MethodTable, Remote extends MethodTable> {
  /** Resolves when the connection closed, with the reason. */
  readonly closed: Promise<string>;
  /** Who the other side is, as messages name it. */
  label: string;

  private readonly socket: WebSocket;
  private readonly options: RpcPeerOptions<Local, Remote>;
  private readonly rpc: JSONRPCServerAndClient;
  /** Requests and notifications of the peer whose handlers have not finished. */
  private inFlight = 0;
  /** Whether reading is paused for the outbound budget, and for the requests in flight. */
  private pausedForOutbound = false;
  private pausedForRequests = false;
  /** Looks again whether the outbound queue drained, while reading is paused for it. */
  private drainCheck: NodeJS.Timeout | undefined;
  /** Messages `ws` delivered after reading was paused, in order. */
  private readonly held: [RawData, boolean][] = [];

  constructor(options: RpcPeerOptions<Local, Remote>) {
    this.options = options;
    this.socket = options.socket;
    this.label = options.label;
    const send = (payload: unknown) => this.send(payload);
    // A handler's error goes back to the caller in the error reply, and the caller reports it;
    // the library's own console logging of it would only repeat that on this side.
    const server = new JSONRPCServer({ errorListener: () => {} });
    // A notification has no reply that could carry an error: report its failures here instead.
    server.applyMiddleware(async (next, request: IncomingRequest, serverParams) => {
      const notification = request.id === undefined;
      if (notification && !server.hasMethod(request.method)) {
        options.onProtocolError(
          new ProtocolError(
            `${this.label} sent a notification of unknown method ${request.method}`,
          ),
        );
        return null;
      }
      try {
        return await next(request as never, serverParams);
      } catch (error) {
        if (!notification) throw error;
        // Malformed params were reported where they were checked.
        if (
          !(error instanceof JSONRPCErrorException && error.code === JSONRPCErrorCode.InvalidParams)
        ) {
          options.onProtocolError(
            new ProtocolError(
              `handling the notification ${request.method} from ${this.label} failed: ${(error as Error)?.message ?? String(error)}`,
              { cause: error },
            ),
          );
        }
        return null;
      }
    });
    this.rpc = new JSONRPCServerAndClient(server, new JSONRPCClient(send), {
      errorListener: (message) => options.onProtocolError(new ProtocolError(message)),
    });
    const closed = deferred<string>();
    this.closed = closed.promise;
    this.socket.once("close", (code, reason) => {
      const why = `the control connection to ${this.label} closed (code ${code}${reason.length > 0 ? `, ${reason.toString()}` : ""})`;
      this.rpc.rejectAllPendingRequests(why);
      closed.resolve(why);
    });
    // An 'error' is always followed by 'close', which is where the loss is reported.
    this.socket.on("error", () => {});
    this.socket.on("message", (data, isBinary) => this.receive(data, isBinary));
  }

  /** True while the connection is open. */
  get isOpen(): boolean {
    return this.socket.readyState === this.socket.OPEN;
  }

  /** Answers requests for `method` with `handler`; params are checked first. */
  handle<K extends keyof Local & string>(method: K, handler: Handler<Local[K]>): void {
    this.handleUnchecked(method, handler as (params: unknown) => unknown);
  }

  /**
   * {@link handle} for a method named at run time (as forwarding tables do); its params are
   * still checked against the method's schema, which must be in the local table.
   */
  handleUnchecked(method: string, handler: (params: unknown) => unknown): void {
    const spec = this.options.local[method] as MethodSpec | undefined;
    if (spec === undefined) {
      throw new IllegalStateError(`${method} is not a method of this side of the control plane`);
    }
    this.rpc.addMethod(method, (raw: unknown) => this.invoke(method, spec, handler, raw));
  }

  private async invoke(
    method: string,
    spec: MethodSpec,
    handler: (params: unknown) => unknown,
    raw: unknown,
  ): Promise<unknown> {
    const params = spec.params.safeParse(raw ?? {});
    if (!params.success) {
      const error = new ProtocolError(
        `${method} from ${this.label} has malformed params: ${z.prettifyError(params.error).replaceAll("\n", " ")}`,
      );
      this.options.onProtocolError(error);
      throw new JSONRPCErrorException(
        error.message,
        JSONRPCErrorCode.InvalidParams,
        serializeThrowable(error),
      );
    }
    try {
      return (await handler(params.data)) ?? null;
    } catch (error) {
      throw new JSONRPCErrorException(
        (error as Error)?.message ?? String(error),
        APPLICATION_ERROR,
        serializeThrowable(error),
      );
    }
  }

  /**
   * Calls `method` on the other side and resolves with its checked result.
   *
   * @throws the remote handler's error (same code), TimeoutError when no reply came within the
   *   request timeout, RemoteTransportError when the connection closed first, ProtocolError for a
   *   malformed reply.
   */
  async call<K extends keyof Remote & string>(
    method: K,
    params: z.input<Remote[K]["params"]>,
  ): Promise<z.output<Remote[K]["result"]>> {
    const spec = this.options.remote[method] as MethodSpec;
    const timeoutMs = this.options.requestTimeoutMs;
    if (!this.isOpen) {
      throw new RemoteTransportError(
        `cannot call ${method}: the control connection to ${this.label} is closed`,
      );
    }
    let raw: unknown;
    try {
      raw = await this.rpc.client
        .timeout(timeoutMs, (id) =>
          createJSONRPCErrorResponse(
            id,
            APPLICATION_ERROR,
            "timeout",
            serializeThrowable(
              new TimeoutError(`${this.label} did not answer ${method} within ${timeoutMs} ms`),
            ),
          ),
        )
        .request(method, params);
    } catch (error) {
      throw this.remoteError(method, error);
    }
    const result = spec.result.safeParse(raw);
    if (!result.success) {
      throw new ProtocolError(
        `${this.label} answered ${method} with a malformed result: ${z.prettifyError(result.error).replaceAll("\n", " ")}`,
      );
    }
    return result.data as z.output<Remote[K]["result"]>;
  }

  /** Sends a notification (no reply); dropped when the connection is gone. */
  notify<K extends keyof Remote & string>(method: K, params: z.input<Remote[K]["params"]>): void {
    if (this.isOpen) this.rpc.notify(method, params);
  }

  /** Closes the connection (the other side sees a normal close). */
  close(reason = "closing"): void {
    if (this.socket.readyState === this.socket.CLOSED) return;
    this.socket.close(1000, reason.slice(0, 120));
    // A peer that never answers the close handshake must not keep this process alive.
    setTimeout(() => this.socket.terminate(), 1_000).unref();
  }

  /** Drops the connection at once. */
  terminate(): void {
    this.socket.terminate();
  }

  private send(payload: unknown): void {
    if (!this.isOpen) {
      throw new RemoteTransportError(`the control connection to ${this.label} is not open`);
    }
    this.socket.send(JSON.stringify(payload), () => this.updateReading());
    this.updateReading();
  }

  /**
   * Pauses reading from the peer while its replies exceed the outbound budget or its requests
   * in flight reach their limit, and resumes once both are below (the budget to half);
   * closes the connection beyond twice the budget.
   */
  private updateReading(): void {
    const { maxOutboundBytes, maxConcurrentRequests } = this.options;
    if (!this.isOpen) {
      clearInterval(this.drainCheck);
      return;
    }
    if (maxOutboundBytes !== undefined) {
      const queued = this.socket.bufferedAmount;
      if (queued > 2 * maxOutboundBytes.value) {
        const error = new LimitExceededError(
          `${this.label} does not read its replies: ${queued} bytes are queued for it, more than twice ${maxOutboundBytes.key} (${maxOutboundBytes.value}); the connection is closed`,
        );
        this.options.onProtocolError(error);
        this.socket.terminate();
        return;
      }
      if (queued >= maxOutboundBytes.value) this.pausedForOutbound = true;
      else if (queued <= maxOutboundBytes.value / 2) this.pausedForOutbound = false;
      // Send callbacks stop once the socket took everything it will take before the peer reads;
      // what drains afterwards is only seen by looking again.
      if (this.pausedForOutbound && this.drainCheck === undefined) {
        this.drainCheck = setInterval(() => this.updateReading(), DRAIN_CHECK_MS);
        this.drainCheck.unref();
      } else if (!this.pausedForOutbound && this.drainCheck !== undefined) {
        clearInterval(this.drainCheck);
        this.drainCheck = undefined;
      }
    }
    if (maxConcurrentRequests !== undefined) {
      this.pausedForRequests = this.inFlight >= maxConcurrentRequests.value;
    }
    const pause = this.pausedForOutbound || this.pausedForRequests;
    if (pause && !this.socket.isPaused) this.socket.pause();
    else if (!pause && this.socket.isPaused) {
      this.socket.resume();
      // What arrived while paused goes first, until a limit pauses reading again.
      while (this.held.length > 0 && !this.socket.isPaused) {
        const [data, isBinary] = this.held.shift() as [RawData, boolean];
        this.dispatch(data, isBinary);
      }
    }
  }

  private receive(data: RawData, isBinary: boolean): void {
    // `pause()` stops the socket, but what `ws` already read still arrives: hold it until
    // reading resumes, so that the limits hold exactly.
    if (this.held.length > 0 || this.socket.isPaused) {
      this.held.push([data, isBinary]);
      return;
    }
    this.dispatch(data, isBinary);
  }

  private dispatch(data: RawData, isBinary: boolean): void {
    const limit = this.options.maxMessageSize?.();
    if (limit !== undefined) {
      const length = rawLength(data);
      if (length > limit.value) {
        this.options.onProtocolError(
          new LimitExceededError(
            `${this.label} sent a message of ${length} bytes, more than ${limit.key} (${limit.value}) allows; the connection is closed`,
          ),
        );
        this.socket.close(1009, "message too big");
        setTimeout(() => this.socket.terminate(), 1_000).unref();
        return;
      }
    }
    if (isBinary) {
      this.reject(null, "binary frames are not part of the control plane");
      return;
    }
    let payload: unknown;
    try {
      payload = JSON.parse(rawText(data));
    } catch (error) {
      this.reject(null, `not JSON (${(error as Error).message})`, JSONRPCErrorCode.ParseError);
      return;
    }
    if (typeof payload !== "object" || payload === null) {
      this.reject(null, `not a JSON-RPC message: ${JSON.stringify(payload).slice(0, 80)}`);
      return;
    }
    // Neither side sends batches; one would be handled as a whole before anything else.
    if (Array.isArray(payload)) {
      this.reject(
        null,
        `a batch of ${payload.length} messages; batches are not part of the control plane`,
      );
      return;
    }
    // In flight from here until its handler ended and the reply was sent.
    this.inFlight++;
    this.updateReading();
    this.rpc
      .receiveAndSend(payload, undefined, undefined)
      .catch((error: unknown) => {
        // Neither a request nor a response (the library reported it to the error listener), or
        // the reply could not be sent because the connection is gone.
        if (this.isOpen) this.reject(idOf(payload), (error as Error).message);
      })
      .finally(() => {
        this.inFlight--;
        this.updateReading();
      });
  }

  /** Answers input that is not a valid request with a JSON-RPC error (id null if unknown). */
  private reject(
    id: string | number | null,
    why: string,
    code: number = JSONRPCErrorCode.InvalidRequest,
  ): void {
    const error = new ProtocolError(`malformed control-plane message from ${this.label}: ${why}`);
    this.options.onProtocolError(error);
    const response: JSONRPCResponse = createJSONRPCErrorResponse(
      id,
      code,
      error.message,
      serializeThrowable(error),
    );
    if (this.isOpen) this.socket.send(JSON.stringify(response));
  }

  private remoteError(method: string, error: unknown): Error {
    if (error instanceof JSONRPCErrorException) {
      const data = serializedThrowable.safeParse(error.data);
      if (data.success) return deserializeThrowable(data.data as SerializedThrowable);
      return new RemoteTransportError(`${method} to ${this.label} failed: ${error.message}`);
    }
    return error instanceof Error ? error : new Error(String(error));
  }
}

function rawLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((sum, chunk) => sum + chunk.length, 0);
  return (data as Buffer | ArrayBuffer).byteLength;
}

function rawText(data: RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString("utf8");
  return Buffer.from(data as ArrayBuffer).toString("utf8");
}

function idOf(payload: unknown): string | number | null {
  const id = (payload as { id?: unknown }).id;
  return typeof id === "string" || typeof id === "number" ? id : null;
}
