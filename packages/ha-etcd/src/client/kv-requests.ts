/**
 * The requests and responses of etcd's key-value API (`etcdserverpb.KV`) that the
 * high-availability services use, as plain objects. Keys and values are UTF-8 strings, revisions
 * and lease ids decimal strings (etcd's int64s, which a JS number cannot hold exactly).
 */

/** One key, or every key that starts with `key` when `prefix` is set. */
export interface KeyRange {
  readonly key: string;
  /** Every key with `key` as prefix (etcd's `range_end` = the prefix's end). */
  readonly prefix?: boolean;
}

/** A read (`Range`). */
export interface RangeRequest extends KeyRange {
  /** At most this many keys (0 or absent: no limit). */
  readonly limit?: number;
  /** The order of the keys (etcd's default: by key, ascending). */
  readonly sort?: {
    readonly target: "KEY" | "CREATE" | "MOD";
    readonly order: "ASCEND" | "DESCEND";
  };
  /** Only keys created at this revision or before. */
  readonly maxCreateRevision?: string;
}

/** A write (`Put`), attached to a lease when `lease` is set (the key goes when the lease does). */
export interface PutRequest {
  readonly key: string;
  readonly value: string;
  readonly lease?: string;
}

/** A delete (`DeleteRange`). */
export type DeleteRangeRequest = KeyRange;

/**
 * A condition of a transaction: the key's create or mod revision equals `revision` ("0" for a
 * create revision: the key does not exist).
 */
export interface Compare {
  readonly key: string;
  readonly target: "CREATE" | "MOD";
  readonly revision: string;
}

/** One operation of a transaction. */
export type Operation =
  | { readonly range: RangeRequest }
  | { readonly put: PutRequest }
  | { readonly deleteRange: DeleteRangeRequest };

/** An atomic compare-and-apply (`Txn`): `success` if every compare holds, else `failure`. */
export interface TxnRequest {
  readonly compare: readonly Compare[];
  readonly success: readonly Operation[];
  readonly failure?: readonly Operation[];
}

/** A stored key. */
export interface KeyValue {
  readonly key: string;
  readonly value: string;
  /** The revision that created the key (a leader's fencing token is its key's). */
  readonly createRevision: string;
  /** The revision of its last change. */
  readonly modRevision: string;
  /** The lease it is attached to ("0": none). */
  readonly lease: string;
}

/** The answer to a {@link RangeRequest}. */
export interface RangeResponse {
  /** The store's revision the read saw. */
  readonly revision: string;
  readonly kvs: readonly KeyValue[];
}

/** The answer to one {@link Operation} of a transaction. */
export type OperationResponse =
  | { readonly range: RangeResponse }
  | { readonly put: true }
  | { readonly deleteRange: { readonly deleted: string } };

/** The answer to a {@link TxnRequest}. */
export interface TxnResponse {
  /** The store's revision after the transaction (a write's revision when it wrote). */
  readonly revision: string;
  /** Whether every compare held (`success` ran) or not (`failure` ran). */
  readonly succeeded: boolean;
  /** One answer per operation that ran, in order. */
  readonly responses: readonly OperationResponse[];
}

/** `Create(key) == revision`. */
export function createRevisionIs(key: string, revision: string): Compare {
  return { key, target: "CREATE", revision };
}

/** `Create(key) == 0`: the key does not exist. */
export function absent(key: string): Compare {
  return { key, target: "CREATE", revision: "0" };
}

/** `Mod(key) == revision`. */
export function modRevisionIs(key: string, revision: string): Compare {
  return { key, target: "MOD", revision };
}
