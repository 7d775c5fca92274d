import http, { type ClientRequest, type IncomingMessage } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import { IllegalArgumentError } from "@sluice/core";
import { HighAvailabilityUnavailableError } from "@sluice/runtime-api";
import { AuthToken } from "./auth-token.js";
import {
  decodeAuthenticate,
  GatewayError,
  gatewayErrorOf,
  MalformedResponseError,
  parseJson,
  refusesAuthToken,
} from "./gateway-json.js";

/** The answers larger than this are refused unless {@link EtcdClientOptions.maxResponseBytes} says otherwise. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** gRPC's UNAVAILABLE (etcd has no leader, or is shutting down): another member may answer. */
const GRPC_UNAVAILABLE = 14;

/** gRPC's FAILED_PRECONDITION: etcd's answer to an authentication when it has none enabled. */
const GRPC_FAILED_PRECONDITION = 9;

/**
 * Codes of Node's errors for a server certificate it did not accept (OpenSSL's X509 verify
 * results, and Node's own for a host the certificate does not name).
 */
const CERTIFICATE_REJECTED =
  /^(ERR_TLS_CERT_ALTNAME_INVALID|.*(CERT|SIGNATURE|ISSUER|CRL|INVALID_CA|PATH_LENGTH|INVALID_PURPOSE|HOSTNAME_MISMATCH).*)$/;

/** TLS for `https://` endpoints: PEM contents (not paths), as Node's `tls.connect` takes them. */
export interface EtcdTlsOptions {
  /** The certificate authorities that sign etcd's certificate (default: Node's own roots). */
  readonly ca?: string | Buffer;
  /** This client's certificate chain, for etcd's `--client-cert-auth`. */
  readonly cert?: string | Buffer;
  /** The private key of {@link EtcdTlsOptions.cert}. */
  readonly key?: string | Buffer;
  /** The passphrase of {@link EtcdTlsOptions.key}, if it is encrypted. */
  readonly passphrase?: string;
}

/** A user of etcd's authentication (`etcdctl auth enable`). */
export interface EtcdAuthOptions {
  /** The user's name (etcdctl's `--user`). */
  readonly username: string;
  /** Its password, sent to `/v3/auth/authenticate` only. */
  readonly password: string;
}

/** Options of {@link EtcdClient}. */
export interface EtcdClientOptions {
  /** etcd's client URLs (`http://10.0.0.1:2379`, `https://...`); tried in turn. */
  readonly endpoints: readonly string[];
  /** How long one request may take, across every endpoint it is tried on. */
  readonly requestTimeoutMs: number;
  /**
   * How long a connection to one endpoint may take before the next is tried (default: the
   * request timeout shared among the endpoints).
   */
  readonly connectTimeoutMs?: number;
  /** The largest answer (or line of a stream) accepted, in bytes (default 8 MiB). */
  readonly maxResponseBytes?: number;
  /** TLS settings of `https://` endpoints. */
  readonly tls?: EtcdTlsOptions;
  /**
   * The user to authenticate as (`POST /v3/auth/authenticate`); its token goes with every
   * request, and is fetched again when etcd refuses it (it expired, or etcd forgot it).
   */
  readonly auth?: EtcdAuthOptions;
}

/** Per-request options of {@link EtcdClient.call}. */
export interface CallOptions {
  /**
   * Whether the request may be sent again to another endpoint after one received it and failed
   * to answer (a read, a lease keepalive). A write is sent again only when it surely did not
   * reach the first endpoint (the connection failed), so that it never applies twice.
   */
  readonly idempotent: boolean;
  /** Overrides the client's request timeout for this request. */
  readonly timeoutMs?: number;
}

/** An open streaming answer (a watch). */
export interface EtcdStream {
  /** The endpoint that answered. */
  readonly endpoint: string;
  /** The answer's body, read as it arrives. */
  readonly response: IncomingMessage;
  /** Ends the stream (idempotent). */
  destroy(): void;
  /**
   * Tells the client that etcd refused the auth token this stream was opened with (a watch is
   * cancelled with etcd's "invalid auth token"): the next request authenticates again.
   */
  tokenRefused(): void;
}

/** A failed attempt at one endpoint. */
class AttemptError extends Error {
  /**
   * The request went out on a kept-alive connection that the server had just closed (the reset
   * came before any answer): a request that may be sent again is tried once more at once.
   */
  staleConnection = false;

  constructor(
    message: string,
    /** Whether the request may have reached etcd (the connection was up). */
    readonly reached: boolean,
    /** Whether another endpoint may answer better (transport failure, etcd unavailable). */
    readonly transient: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

interface Endpoint {
  readonly url: string;
  readonly secure: boolean;
  readonly hostname: string;
  readonly port: number;
}

/**
 * A client of etcd's v3 API over its JSON gRPC gateway (`POST /v3/kv/range` and the others, on
 * etcd's client URL), on Node's own `http`/`https`: no gRPC stack, no install script. Every
 * request has a deadline and a bounded answer; endpoints are tried in turn, starting with the one
 * that answered last. Every failure is a `HighAvailabilityUnavailableError` that names the
 * operation and the endpoints. The key-value API, leases and watches sit on top of it
 * (`EtcdKv`, `LeaseKeeper`, `EtcdWatcher`).
 */
export class EtcdClient {
  /** etcd's client URLs, as given. */
  readonly endpoints: readonly string[];
  /** The largest answer (or stream line) accepted, in bytes. */
  readonly maxResponseBytes: number;
  /** The default deadline of a request. */
  readonly requestTimeoutMs: number;

  private readonly targets: readonly Endpoint[];
  private readonly connectTimeoutMs: number;
  private readonly httpAgent: http.Agent;
  private readonly httpsAgent: https.Agent;
  private readonly active = new Set<ClientRequest>();
  private readonly hasClientCertificate: boolean;
  private readonly token: AuthToken | undefined;
  private preferred = 0;
  private isClosed = false;

  /**
   * @throws IllegalArgumentError when an endpoint is not an http(s) URL, there is none, or
   *   some are `http://` and others `https://`.
   */
  constructor(options: EtcdClientOptions) {
    if (options.endpoints.length === 0) {
      throw new IllegalArgumentError("an etcd client needs at least one endpoint");
    }
    this.endpoints = [...options.endpoints];
    this.targets = options.endpoints.map(parseEndpoint);
    if (new Set(this.targets.map((target) => target.secure)).size > 1) {
      // A failover to the plain member would send every key (and the password) in the clear.
      throw new IllegalArgumentError(
        `the etcd endpoints must all be http:// or all https://, got ${this.endpoints.join(",")}`,
      );
    }
    this.requestTimeoutMs = options.requestTimeoutMs;
    this.connectTimeoutMs =
      options.connectTimeoutMs ??
      Math.max(100, Math.floor(options.requestTimeoutMs / options.endpoints.length));
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.httpAgent = new http.Agent({ keepAlive: true });
    this.httpsAgent = new https.Agent({
      keepAlive: true,
      ...(options.tls?.ca === undefined ? {} : { ca: options.tls.ca }),
      ...(options.tls?.cert === undefined ? {} : { cert: options.tls.cert }),
      ...(options.tls?.key === undefined ? {} : { key: options.tls.key }),
      ...(options.tls?.passphrase === undefined ? {} : { passphrase: options.tls.passphrase }),
    });
    this.hasClientCertificate = options.tls?.cert !== undefined;
    const auth = options.auth;
    this.token =
      auth === undefined
        ? undefined
        : new AuthToken((what, timeoutMs) =>
            this.withFailover(
              `authenticating as '${auth.username}' (${what})`,
              { idempotent: true, timeoutMs },
              async (target, deadline) => {
                const body = JSON.stringify({ name: auth.username, password: auth.password });
                const answer = await this.exchange(
                  target,
                  "/v3/auth/authenticate",
                  body,
                  deadline,
                  "unary",
                  undefined,
                );
                try {
                  return decodeAuthenticate(answerOf(answer.status, answer.text));
                } catch (error) {
                  // etcd without authentication enabled: requests need no token (as etcd's own
                  // client goes on).
                  if (
                    error instanceof GatewayError &&
                    error.grpcCode === GRPC_FAILED_PRECONDITION
                  ) {
                    return "";
                  }
                  throw attemptErrorOf(error);
                }
              },
            ),
          );
  }

  /**
   * Sends one request to `path` (`/v3/kv/range`, ...) and decodes the answer with `decode`.
   *
   * @throws HighAvailabilityUnavailableError naming `what` and the endpoints when no endpoint
   *   answered in time, etcd answered with an error, or the answer is malformed or too large.
   */
  async call<T>(
    what: string,
    path: string,
    body: object,
    decode: (json: unknown) => T,
    options: CallOptions,
  ): Promise<T> {
    const payload = JSON.stringify(body);
    return this.authorized(what, options.timeoutMs, (token, timeoutMs) =>
      this.withFailover(what, { ...options, timeoutMs }, async (target, deadline) => {
        const answer = await this.exchange(target, path, payload, deadline, "unary", token);
        try {
          return decode(answerOf(answer.status, answer.text));
        } catch (error) {
          throw attemptErrorOf(error);
        }
      }),
    );
  }

  /**
   * Opens a streaming request (`/v3/watch`): resolves once etcd answered with the stream's
   * headers, within the request timeout. The caller reads and bounds the body.
   *
   * @throws HighAvailabilityUnavailableError naming `what` and the endpoints.
   */
  stream(what: string, path: string, body: object): Promise<EtcdStream> {
    const payload = JSON.stringify(body);
    return this.authorized(what, undefined, (token, timeoutMs) =>
      this.withFailover(what, { idempotent: true, timeoutMs }, async (target, deadline) => {
        const { request, response } = await this.exchange(
          target,
          path,
          payload,
          deadline,
          "stream",
          token,
        );
        return {
          endpoint: target.url,
          response,
          destroy: () => {
            request.destroy();
            this.active.delete(request);
          },
          tokenRefused: () => {
            if (token !== undefined) this.token?.refused(token);
          },
        };
      }),
    );
  }

  /** Whether {@link EtcdClient.close} was called (watches and keepalives then stop retrying). */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Ends every request and connection; later requests fail. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    for (const request of this.active) request.destroy();
    this.active.clear();
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  /** A HighAvailabilityUnavailableError for `what`, naming the endpoints. */
  unavailable(what: string, reason: string, cause?: unknown): HighAvailabilityUnavailableError {
    return new HighAvailabilityUnavailableError(
      `${what} failed against etcd at ${this.endpoints.join(",")}: ${reason}`,
      cause === undefined ? undefined : { cause },
    );
  }

  /**
   * Runs `run` with the current auth token (none without {@link EtcdClientOptions.auth}), and
   * once more with a new token when etcd refused it (it expired, or etcd forgot it): etcd
   * checks the token before anything else, so nothing was applied. Both tries share
   * the request's deadline.
   */
  private async authorized<T>(
    what: string,
    timeoutMs: number | undefined,
    run: (token: string | undefined, timeoutMs: number) => Promise<T>,
  ): Promise<T> {
    const deadline = Date.now() + (timeoutMs ?? this.requestTimeoutMs);
    if (this.token === undefined) return run(undefined, deadline - Date.now());
    for (let retried = false; ; retried = true) {
      const token = await this.token.get(what, Math.max(1, deadline - Date.now()));
      try {
        return await run(token, Math.max(1, deadline - Date.now()));
      } catch (error) {
        const cause = (error as Error).cause;
        if (retried || !(cause instanceof GatewayError) || !refusesAuthToken(cause.message)) {
          throw error;
        }
        this.token.refused(token);
      }
    }
  }

  private async withFailover<T>(
    what: string,
    options: CallOptions,
    attempt: (target: Endpoint, deadline: number) => Promise<T>,
  ): Promise<T> {
    const deadline = Date.now() + (options.timeoutMs ?? this.requestTimeoutMs);
    const failures: string[] = [];
    const count = this.targets.length;
    const first = this.preferred;
    let lastError: unknown;
    let retriedStale = false;
    for (let i = 0; i < count; i++) {
      if (this.isClosed) {
        throw this.unavailable(what, "the etcd client is closed");
      }
      const index = (first + i) % count;
      const target = this.targets[index] as Endpoint;
      // A request that may be sent again leaves each endpoint left its share of the time, so
      // that one that takes it and never answers does not use it all up.
      const attemptDeadline = options.idempotent
        ? Date.now() + Math.floor((deadline - Date.now()) / (count - i))
        : deadline;
      try {
        const result = await attempt(target, attemptDeadline);
        this.preferred = index;
        return result;
      } catch (error) {
        lastError =
          error instanceof AttemptError && error.cause !== undefined ? error.cause : error;
        if (
          error instanceof AttemptError &&
          error.staleConnection &&
          options.idempotent &&
          !retriedStale
        ) {
          retriedStale = true;
          i--;
          continue;
        }
        failures.push(`${target.url}: ${(error as Error).message}`);
        const another =
          error instanceof AttemptError &&
          error.transient &&
          (!error.reached || options.idempotent) &&
          i + 1 < count &&
          Date.now() < deadline;
        if (!another) break;
      }
    }
    throw this.unavailable(what, failures.join("; "), lastError);
  }

  /**
   * One request to one endpoint: `unary` resolves with the whole (bounded) answer, `stream` once
   * the answer's headers say 200.
   */
  private exchange(
    target: Endpoint,
    path: string,
    payload: string,
    deadline: number,
    mode: "unary",
    token: string | undefined,
  ): Promise<{ status: number; text: string }>;
  private exchange(
    target: Endpoint,
    path: string,
    payload: string,
    deadline: number,
    mode: "stream",
    token: string | undefined,
  ): Promise<{ request: ClientRequest; response: IncomingMessage }>;
  private exchange(
    target: Endpoint,
    path: string,
    payload: string,
    deadline: number,
    mode: "unary" | "stream",
    token: string | undefined,
  ): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        reject(new AttemptError("no time left before the deadline", false, true));
        return;
      }
      const request = (target.secure ? https : http).request({
        method: "POST",
        hostname: target.hostname,
        port: target.port,
        path,
        agent: target.secure ? this.httpsAgent : this.httpAgent,
        headers: {
          "content-type": "application/json",
          "content-length": Buffer.byteLength(payload),
          // etcd's gateway passes the header on as the token's metadata ("" when etcd has no
          // authentication enabled).
          ...(token === undefined || token === "" ? {} : { authorization: token }),
        },
      });
      this.active.add(request);
      let reached = false;
      let connected = false;
      let secured = false;
      let settled = false;
      let connectTimer: NodeJS.Timeout | undefined;
      const finish = () => {
        settled = true;
        clearTimeout(deadlineTimer);
        clearTimeout(connectTimer);
      };
      let answered = false;
      const fail = (error: Error, transient = true) => {
        if (settled) return;
        finish();
        this.active.delete(request);
        request.destroy();
        if (error instanceof AttemptError) {
          reject(error);
          return;
        }
        const tls = target.secure
          ? tlsFailureOf(error, connected, secured, this.hasClientCertificate)
          : undefined;
        if (tls !== undefined) {
          // A failed handshake (or etcd's alert refusing this client's certificate, which with
          // TLS 1.3 comes after the request was written) means etcd's HTTP layer read nothing.
          const beforeRequest = !secured || tls.alert;
          reject(new AttemptError(tls.message, reached && !beforeRequest, true, { cause: error }));
          return;
        }
        const failure = new AttemptError(error.message, reached, transient, { cause: error });
        const code = (error as NodeJS.ErrnoException).code;
        failure.staleConnection =
          request.reusedSocket && !answered && (code === "ECONNRESET" || code === "EPIPE");
        reject(failure);
      };
      const deadlineTimer = setTimeout(
        () => fail(new Error(`no answer within ${remaining} ms`)),
        remaining,
      );
      request.on("socket", (socket: Socket) => {
        if (!socket.connecting) {
          reached = true;
          connected = true;
          secured = true;
          return;
        }
        const connectMs = Math.min(this.connectTimeoutMs, remaining);
        connectTimer = setTimeout(
          () => fail(new Error(`could not connect within ${connectMs} ms`)),
          connectMs,
        );
        socket.once("connect", () => {
          connected = true;
        });
        socket.once(target.secure ? "secureConnect" : "connect", () => {
          reached = true;
          secured = true;
          clearTimeout(connectTimer);
        });
      });
      request.on("error", (error) => fail(error));
      request.on("response", (response) => {
        answered = true;
        response.on("error", (error) =>
          fail(new Error(`the answer was cut off (${error.message})`, { cause: error })),
        );
        response.on("close", () => {
          if (!response.complete) fail(new Error("the answer was cut off"));
        });
        if (mode === "stream" && response.statusCode === 200) {
          finish();
          response.once("close", () => this.active.delete(request));
          resolve({ request, response });
          return;
        }
        const declared = Number(response.headers["content-length"] ?? 0);
        if (declared > this.maxResponseBytes) {
          fail(tooLarge(declared, this.maxResponseBytes), false);
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > this.maxResponseBytes) {
            fail(tooLarge(size, this.maxResponseBytes), false);
            return;
          }
          chunks.push(chunk);
        });
        response.on("end", () => {
          if (settled) return;
          finish();
          this.active.delete(request);
          const status = response.statusCode ?? 0;
          const text = Buffer.concat(chunks).toString("utf8");
          if (mode === "stream") {
            // A stream that etcd refused: its answer is the error.
            try {
              answerOf(status, text);
              reject(new AttemptError(`HTTP ${status} without a stream`, true, false));
            } catch (error) {
              reject(attemptErrorOf(error));
            }
            return;
          }
          resolve({ status, text });
        });
      });
      request.end(payload);
    }).catch((error: unknown) => {
      throw attemptErrorOf(error);
    });
  }
}

function tooLarge(size: number, limit: number): AttemptError {
  return new AttemptError(
    `the answer is larger than the limit of ${limit} bytes (${size} bytes so far)`,
    true,
    false,
  );
}

/** Turns etcd's error answers into GatewayError; a 200 answer is returned as JSON. */
function answerOf(status: number, text: string): unknown {
  if (status !== 200) {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new GatewayError(`HTTP ${status}: ${text.slice(0, 200).trim()}`, -1);
    }
    throw (
      gatewayErrorOf(json) ?? new GatewayError(`HTTP ${status}: ${text.slice(0, 200).trim()}`, -1)
    );
  }
  const json = parseJson(text);
  const error = gatewayErrorOf(json);
  if (error !== undefined) throw error;
  return json;
}

/** Classifies an error of one attempt: may another endpoint answer? */
function attemptErrorOf(error: unknown): AttemptError {
  if (error instanceof AttemptError) return error;
  if (error instanceof GatewayError) {
    return new AttemptError(
      `etcd answered with an error: ${error.message}`,
      true,
      error.grpcCode === GRPC_UNAVAILABLE,
      { cause: error },
    );
  }
  if (error instanceof MalformedResponseError) {
    return new AttemptError(`malformed answer: ${error.message}`, true, false, { cause: error });
  }
  return new AttemptError((error as Error).message, true, false, { cause: error });
}

/**
 * What went wrong with TLS, naming TLS's own reason and code (the caller prefixes the
 * endpoint), and whether etcd sent an alert; `undefined` when `error` is not a TLS failure (a
 * refused connection, a timeout before the TCP connection, an HTTP error).
 */
function tlsFailureOf(
  error: NodeJS.ErrnoException & { reason?: string },
  connected: boolean,
  secured: boolean,
  hasClientCertificate: boolean,
): { readonly message: string; readonly alert: boolean } | undefined {
  const code = error.code ?? "";
  const codeText = code === "" ? "" : ` (${code})`;
  // OpenSSL's messages: "<id>:error:<hex>:SSL routines:<function>:<reason>:<file>:<line>:...".
  const openssl = /SSL routines:[^:]*:([^:]+)/.exec(error.message);
  if (!secured && connected && CERTIFICATE_REJECTED.test(code) && openssl === null) {
    return {
      message:
        `etcd's TLS certificate is not trusted: ${error.message}${codeText}; it must be signed ` +
        "by a trusted certificate authority (the configured one, else Node's roots) and name " +
        "the endpoint's host",
      alert: false,
    };
  }
  if (openssl !== null || code.startsWith("ERR_SSL_")) {
    const reason = error.reason ?? openssl?.[1] ?? error.message;
    if (!/alert/.test(reason)) return { message: `TLS failed: ${reason}${codeText}`, alert: false };
    return {
      message:
        `etcd refused the TLS connection: ${reason}${codeText}; ` +
        (hasClientCertificate
          ? "it did not accept this client's certificate (is it signed by etcd's --trusted-ca-file?)"
          : "no client certificate was presented, and an etcd with --client-cert-auth requires one"),
      alert: true,
    };
  }
  if (connected && !secured) {
    return {
      message: `the TLS handshake did not complete: ${error.message}${codeText}; does etcd serve TLS at this URL?`,
      alert: false,
    };
  }
  return undefined;
}

function parseEndpoint(url: string): Endpoint {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new IllegalArgumentError(`an etcd endpoint must be an http(s) URL, got ${url}`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new IllegalArgumentError(`an etcd endpoint must be an http(s) URL, got ${url}`);
  }
  const secure = parsed.protocol === "https:";
  return {
    url,
    secure,
    hostname: parsed.hostname.replace(/^\[|\]$/g, ""),
    port: parsed.port === "" ? (secure ? 443 : 80) : Number(parsed.port),
  };
}
