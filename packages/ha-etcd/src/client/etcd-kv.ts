import type { EtcdClient } from "./etcd-client.js";
import { EtcdWatcher, type WatchListener } from "./etcd-watcher.js";
import {
  decodeDeleteRange,
  decodePut,
  decodeRange,
  decodeTxn,
  encodeDeleteRange,
  encodePut,
  encodeRange,
  encodeTxn,
} from "./gateway-json.js";
import type {
  DeleteRangeRequest,
  KeyRange,
  KeyValue,
  PutRequest,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from "./kv-requests.js";

/**
 * etcd's key-value API under one key prefix (a namespace, as etcd's Go client's `namespace`
 * package does it): every key given is put after `namespace`, and every key answered has it
 * taken off. Every method takes `what`, the operation a failure names.
 */
export class EtcdKv {
  constructor(
    readonly client: EtcdClient,
    /** The prefix of every key (`/sluice/<cluster-id>/`). */
    readonly namespace: string,
  ) {}

  /** Reads a key or a prefix (sent to another endpoint if one fails: a read is idempotent). */
  range(what: string, request: RangeRequest): Promise<RangeResponse> {
    return this.client.call(
      what,
      "/v3/kv/range",
      encodeRange(this.namespace, request),
      (json) => decodeRange(json, this.namespace),
      { idempotent: true },
    );
  }

  /** Reads one key; `undefined` when it does not exist. */
  async get(what: string, key: string): Promise<KeyValue | undefined> {
    return (await this.range(what, { key })).kvs[0];
  }

  /**
   * Writes one key (no compare: the stores fence theirs with {@link EtcdKv.txn}); resolves with
   * the write's revision.
   */
  put(what: string, request: PutRequest): Promise<string> {
    return this.client.call(what, "/v3/kv/put", encodePut(this.namespace, request), decodePut, {
      idempotent: false,
    });
  }

  /** Deletes a key or a prefix; resolves with how many keys went. */
  deleteRange(what: string, request: DeleteRangeRequest): Promise<string> {
    return this.client.call(
      what,
      "/v3/kv/deleterange",
      encodeDeleteRange(this.namespace, request),
      decodeDeleteRange,
      { idempotent: false },
    );
  }

  /**
   * Applies a transaction. A transaction that only reads is sent to another endpoint if one
   * fails; one that writes only when the first surely did not receive it.
   */
  txn(what: string, request: TxnRequest): Promise<TxnResponse> {
    const readOnly = [...request.success, ...(request.failure ?? [])].every(
      (operation) => "range" in operation,
    );
    return this.client.call(
      what,
      "/v3/kv/txn",
      encodeTxn(this.namespace, request),
      (json) => decodeTxn(json, this.namespace),
      { idempotent: readOnly },
    );
  }

  /**
   * Watches `range` from `startRevision` on, until closed: resolves once etcd created the
   * watch. See {@link EtcdWatcher} for reconnects.
   *
   * @throws HighAvailabilityUnavailableError naming `what` when etcd cannot create it.
   */
  async watch(
    what: string,
    range: KeyRange,
    startRevision: string,
    listener: WatchListener,
  ): Promise<EtcdWatcher> {
    const watcher = new EtcdWatcher(this.client, this.namespace, {
      what,
      range,
      startRevision,
      listener,
    });
    await watcher.start();
    return watcher;
  }
}
