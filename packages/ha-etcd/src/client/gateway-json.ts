import type {
  Compare,
  KeyRange,
  KeyValue,
  Operation,
  OperationResponse,
  PutRequest,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from "./kv-requests.js";

/**
 * The JSON mapping of etcd's v3 messages as its gRPC gateway serves them (`/v3/...` on the
 * client URL, etcd 3.4 and later): field names as in the proto files (`create_revision`), keys and
 * values base64, int64s as decimal strings, enums by name, and fields at their default value
 * left out (`succeeded: false`, an empty `kvs`, the event type `PUT`). Every decoder checks the
 * shape it reads and throws {@link MalformedResponseError} naming the field and what it found.
 */

/** A gateway answer that is not what etcd sends: not JSON, or a field missing or of a wrong type. */
export class MalformedResponseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MalformedResponseError";
  }
}

/** A gateway answer that carries an error of etcd's (`{"error", "code"}`, a gRPC status code). */
export class GatewayError extends Error {
  constructor(
    message: string,
    /** The gRPC status code (5: not found, 14: unavailable, ...), or -1 when there was none. */
    readonly grpcCode: number,
  ) {
    super(message);
    this.name = "GatewayError";
  }
}

/** gRPC's NOT_FOUND (a revoked or expired lease). */
export const GRPC_NOT_FOUND = 5;

type Json = Record<string, unknown>;

const INT64 = /^-?\d{1,19}$/;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function seen(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 80)}...` : text;
}

/** Parses a gateway body (one JSON message). */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new MalformedResponseError(
      `the answer is not JSON (${(error as Error).message}): ${seen(text)}`,
    );
  }
}

function object(value: unknown, field: string): Json {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new MalformedResponseError(`${field} must be an object, got ${seen(value)}`);
  }
  return value as Json;
}

/** An int64 field; absent means 0, as the gateway leaves out default values. */
function int64(value: unknown, field: string): string {
  if (value === undefined) return "0";
  if (typeof value !== "string" || !INT64.test(value)) {
    throw new MalformedResponseError(
      `${field} must be an int64 as a decimal string, got ${seen(value)}`,
    );
  }
  return BigInt(value).toString();
}

function bool(value: unknown, field: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== "boolean") {
    throw new MalformedResponseError(`${field} must be a boolean, got ${seen(value)}`);
  }
  return value;
}

function array(value: unknown, field: string): readonly unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new MalformedResponseError(`${field} must be an array, got ${seen(value)}`);
  }
  return value;
}

function bytes(value: unknown, field: string): Buffer {
  if (value === undefined) return Buffer.alloc(0);
  if (typeof value !== "string" || !BASE64.test(value)) {
    throw new MalformedResponseError(`${field} must be base64, got ${seen(value)}`);
  }
  return Buffer.from(value, "base64");
}

function base64(text: string | Buffer): string {
  return (typeof text === "string" ? Buffer.from(text, "utf8") : text).toString("base64");
}

/**
 * The end of the range of every key that starts with `prefix` (etcd's `GetPrefixRangeEnd`): the
 * prefix with its last byte below 0xff incremented and what follows dropped; `\0` (to the end of
 * the key space) when every byte is 0xff.
 */
export function prefixEnd(prefix: Buffer): Buffer {
  for (let i = prefix.length - 1; i >= 0; i--) {
    if ((prefix[i] as number) < 0xff) {
      const end = Buffer.from(prefix.subarray(0, i + 1));
      end[i] = (prefix[i] as number) + 1;
      return end;
    }
  }
  return Buffer.from([0]);
}

function rangeFields(namespace: string, range: KeyRange): Json {
  const key = Buffer.from(namespace + range.key, "utf8");
  return range.prefix === true
    ? { key: base64(key), range_end: base64(prefixEnd(key)) }
    : { key: base64(key) };
}

/** The body of `/v3/kv/range`. */
export function encodeRange(namespace: string, request: RangeRequest): Json {
  return {
    ...rangeFields(namespace, request),
    ...(request.limit === undefined ? {} : { limit: String(request.limit) }),
    ...(request.sort === undefined
      ? {}
      : { sort_target: request.sort.target, sort_order: request.sort.order }),
    ...(request.maxCreateRevision === undefined
      ? {}
      : { max_create_revision: request.maxCreateRevision }),
  };
}

function encodeCompare(namespace: string, compare: Compare): Json {
  return {
    key: base64(namespace + compare.key),
    target: compare.target,
    result: "EQUAL",
    [compare.target === "CREATE" ? "create_revision" : "mod_revision"]: compare.revision,
  };
}

function encodeOperation(namespace: string, operation: Operation): Json {
  if ("range" in operation) return { request_range: encodeRange(namespace, operation.range) };
  if ("put" in operation) return { request_put: encodePut(namespace, operation.put) };
  return { request_delete_range: encodeDeleteRange(namespace, operation.deleteRange) };
}

/** The body of `/v3/kv/txn`. */
export function encodeTxn(namespace: string, request: TxnRequest): Json {
  return {
    compare: request.compare.map((compare) => encodeCompare(namespace, compare)),
    success: request.success.map((operation) => encodeOperation(namespace, operation)),
    failure: (request.failure ?? []).map((operation) => encodeOperation(namespace, operation)),
  };
}

/** The revision of a response's `header` (every etcd response has one). */
export function decodeHeaderRevision(body: Json, field: string): string {
  const header = object(body.header, `${field}.header`);
  if (header.revision === undefined) {
    throw new MalformedResponseError(`${field}.header.revision is missing`);
  }
  return int64(header.revision, `${field}.header.revision`);
}

/** A key-value pair, with `namespace` stripped from its key. */
export function decodeKeyValue(value: unknown, namespace: string, field: string): KeyValue {
  const kv = object(value, field);
  const key = bytes(kv.key, `${field}.key`).toString("utf8");
  if (!key.startsWith(namespace)) {
    throw new MalformedResponseError(
      `${field}.key ${seen(key)} is outside the requested namespace ${seen(namespace)}`,
    );
  }
  return {
    key: key.slice(namespace.length),
    value: bytes(kv.value, `${field}.value`).toString("utf8"),
    createRevision: int64(kv.create_revision, `${field}.create_revision`),
    modRevision: int64(kv.mod_revision, `${field}.mod_revision`),
    lease: int64(kv.lease, `${field}.lease`),
  };
}

function decodeRangeBody(body: Json, namespace: string, field: string): RangeResponse {
  return {
    revision: decodeHeaderRevision(body, field),
    kvs: array(body.kvs, `${field}.kvs`).map((kv, i) =>
      decodeKeyValue(kv, namespace, `${field}.kvs[${i}]`),
    ),
  };
}

/** The answer of `/v3/kv/range`. */
export function decodeRange(value: unknown, namespace: string): RangeResponse {
  return decodeRangeBody(object(value, "the range response"), namespace, "the range response");
}

/** The body of `/v3/kv/put`. */
export function encodePut(namespace: string, request: PutRequest): Json {
  return {
    key: base64(namespace + request.key),
    value: base64(request.value),
    ...(request.lease === undefined ? {} : { lease: request.lease }),
  };
}

/** The body of `/v3/kv/deleterange`. */
export function encodeDeleteRange(namespace: string, request: KeyRange): Json {
  return rangeFields(namespace, request);
}

/** The answer of `/v3/kv/put`: the revision of the write. */
export function decodePut(value: unknown): string {
  return decodeHeaderRevision(object(value, "the put response"), "the put response");
}

/** The answer of `/v3/kv/deleterange`: how many keys went. */
export function decodeDeleteRange(value: unknown): string {
  const field = "the delete response";
  const body = object(value, field);
  decodeHeaderRevision(body, field);
  return int64(body.deleted, `${field}.deleted`);
}

/** The answer of `/v3/kv/txn`. */
export function decodeTxn(value: unknown, namespace: string): TxnResponse {
  const field = "the txn response";
  const body = object(value, field);
  const responses = array(body.responses, `${field}.responses`).map(
    (item, i): OperationResponse => {
      const where = `${field}.responses[${i}]`;
      const response = object(item, where);
      if (response.response_range !== undefined) {
        const range = object(response.response_range, `${where}.response_range`);
        return { range: decodeRangeBody(range, namespace, `${where}.response_range`) };
      }
      if (response.response_put !== undefined) {
        object(response.response_put, `${where}.response_put`);
        return { put: true };
      }
      if (response.response_delete_range !== undefined) {
        const deleted = object(response.response_delete_range, `${where}.response_delete_range`);
        return {
          deleteRange: {
            deleted: int64(deleted.deleted, `${where}.response_delete_range.deleted`),
          },
        };
      }
      throw new MalformedResponseError(`${where} holds no known response: ${seen(item)}`);
    },
  );
  return {
    revision: decodeHeaderRevision(body, field),
    succeeded: bool(body.succeeded, `${field}.succeeded`),
    responses,
  };
}

/** The answer of `/v3/auth/authenticate`: the token to send with later requests. */
export function decodeAuthenticate(value: unknown): string {
  const field = "the authenticate response";
  const body = object(value, field);
  decodeHeaderRevision(body, field);
  if (typeof body.token !== "string" || body.token === "") {
    throw new MalformedResponseError(
      `${field}.token must be a non-empty string, got ${seen(body.token)}`,
    );
  }
  return body.token;
}

/**
 * Whether etcd refused a request (or cancelled a watch) because of its auth token, so that a
 * new token would do: the token is unknown (it expired, or etcd forgot it), the authentication
 * settings changed since it was issued, or there was none (authentication was enabled since).
 */
export function refusesAuthToken(reason: string): boolean {
  return /etcdserver: (invalid auth token|revision of auth store is old|user name is empty)/.test(
    reason,
  );
}

/** The answer of `/v3/lease/grant`: the lease's id. */
export function decodeLeaseGrant(value: unknown): string {
  const field = "the lease grant response";
  const body = object(value, field);
  decodeHeaderRevision(body, field);
  if (typeof body.error === "string" && body.error !== "") {
    throw new GatewayError(`etcd refused the lease: ${body.error}`, -1);
  }
  const id = int64(body.ID, `${field}.ID`);
  if (id === "0") throw new MalformedResponseError(`${field}.ID is missing`);
  return id;
}

/** The answer of `/v3/lease/keepalive`: the lease's remaining TTL in seconds (0: it is gone). */
export function decodeLeaseKeepAlive(value: unknown, id: string): number {
  const field = "the lease keepalive response";
  const result = object(object(value, field).result, `${field}.result`);
  decodeHeaderRevision(result, `${field}.result`);
  const answered = int64(result.ID, `${field}.result.ID`);
  if (answered !== id) {
    throw new MalformedResponseError(`${field}.result.ID is ${answered}, not the lease ${id}`);
  }
  const ttl = Number(int64(result.TTL, `${field}.result.TTL`));
  return Math.max(ttl, 0);
}

/** The answer of `/v3/lease/revoke` (a header). */
export function decodeLeaseRevoke(value: unknown): void {
  decodeHeaderRevision(object(value, "the lease revoke response"), "the lease revoke response");
}

/**
 * The error a gateway answered with instead of a message, when it is one (`{"error", "code"}`
 * from a unary call, `{"error": {"grpc_code", "message"}}` in a stream); else `undefined`.
 */
export function gatewayErrorOf(value: unknown): GatewayError | undefined {
  if (typeof value !== "object" || value === null || !("error" in value)) return undefined;
  const { error, code, message } = value as Json;
  if (typeof error === "object" && error !== null) {
    const inner = error as Json;
    return new GatewayError(
      String(inner.message ?? seen(inner)),
      typeof inner.grpc_code === "number" ? inner.grpc_code : -1,
    );
  }
  return new GatewayError(String(message ?? error), typeof code === "number" ? code : -1);
}

/** One change a watch reports, with the namespace stripped from its key. */
export interface WatchEvent {
  readonly type: "PUT" | "DELETE";
  readonly kv: KeyValue;
}

/** One message of a watch stream. */
export interface WatchMessage {
  /** The store's revision when etcd sent it (every change up to it was sent before, unless it is `created`). */
  readonly revision: string;
  /** etcd created the watch (its first message). */
  readonly created: boolean;
  /** etcd ended the watch: `compactRevision` > 0 when the start revision was compacted away. */
  readonly canceled: boolean;
  readonly cancelReason: string;
  readonly compactRevision: string;
  readonly events: readonly WatchEvent[];
}

/** One line of `/v3/watch`: `{"result": WatchResponse}`. */
export function decodeWatchMessage(value: unknown, namespace: string): WatchMessage {
  const field = "the watch response";
  const result = object(object(value, field).result, `${field}.result`);
  // A cancellation's header carries no revision (left out as 0).
  const header = object(result.header, `${field}.result.header`);
  return {
    revision: int64(header.revision, `${field}.result.header.revision`),
    created: bool(result.created, `${field}.result.created`),
    canceled: bool(result.canceled, `${field}.result.canceled`),
    cancelReason: typeof result.cancel_reason === "string" ? result.cancel_reason : "",
    compactRevision: int64(result.compact_revision, `${field}.result.compact_revision`),
    events: array(result.events, `${field}.result.events`).map((item, i): WatchEvent => {
      const where = `${field}.result.events[${i}]`;
      const event = object(item, where);
      if (event.type !== undefined && event.type !== "PUT" && event.type !== "DELETE") {
        throw new MalformedResponseError(
          `${where}.type must be PUT or DELETE, got ${seen(event.type)}`,
        );
      }
      return {
        type: event.type === "DELETE" ? "DELETE" : "PUT",
        kv: decodeKeyValue(event.kv, namespace, `${where}.kv`),
      };
    }),
  };
}

/**
 * The body of `/v3/watch` that creates a watch of `range` from `startRevision`, with progress
 * notifications (an idle watch still learns how far etcd's revision moved).
 */
export function encodeWatchCreate(namespace: string, range: KeyRange, startRevision: string): Json {
  return {
    create_request: {
      ...rangeFields(namespace, range),
      start_revision: startRevision,
      progress_notify: true,
    },
  };
}
