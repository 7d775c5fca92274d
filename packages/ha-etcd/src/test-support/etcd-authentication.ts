import type { EtcdClient } from "../client/etcd-client.js";
import { decodeHeaderRevision, prefixEnd } from "../client/gateway-json.js";

/** The users {@link enableEtcdAuthentication} creates. */
export interface EtcdUsers {
  /** etcd's `root` user's password (the fixture's operator view authenticates as root). */
  readonly rootPassword: string;
  /** A user of the job managers, and its password. */
  readonly username: string;
  readonly password: string;
  /** The keys the user may read and write: every key that starts with it. */
  readonly prefix: string;
}

/**
 * Turns on etcd's authentication over the gateway, as `etcdctl user add`, `role add`,
 * `role grant-permission --prefix readwrite`, `user grant-role` and `auth enable` do: `root`
 * (with the root role, which etcd requires first) and a user whose role grants `prefix` only.
 */
export async function enableEtcdAuthentication(
  client: EtcdClient,
  users: EtcdUsers,
): Promise<void> {
  const send = (what: string, path: string, body: object) => sendAuth(client, what, path, body);
  const role = `${users.username}-role`;
  await send("adding the root role", "/v3/auth/role/add", { name: "root" });
  await send("adding root", "/v3/auth/user/add", { name: "root", password: users.rootPassword });
  await send("granting root", "/v3/auth/user/grant", { user: "root", role: "root" });
  await send("adding the user's role", "/v3/auth/role/add", { name: role });
  const key = Buffer.from(users.prefix, "utf8");
  await send("granting the prefix", "/v3/auth/role/grant", {
    name: role,
    perm: {
      permType: "READWRITE",
      key: key.toString("base64"),
      range_end: prefixEnd(key).toString("base64"),
    },
  });
  await send("adding the user", "/v3/auth/user/add", {
    name: users.username,
    password: users.password,
  });
  await send("granting the user", "/v3/auth/user/grant", { user: users.username, role });
  await send("enabling authentication", "/v3/auth/enable", {});
}

/**
 * Makes etcd forget every auth token it issued, as an operator's `etcdctl auth disable` and
 * `auth enable` do (as a token's expiry would, without waiting for it): clients must
 * authenticate again. `root` makes a new client authenticated as root (one for each step: the
 * first one's token is gone after the first).
 */
export async function dropEtcdAuthTokens(root: () => EtcdClient): Promise<void> {
  await sendAuth(root(), "disabling authentication", "/v3/auth/disable", {});
  await sendAuth(root(), "enabling authentication", "/v3/auth/enable", {});
}

/** One request of etcd's auth API (its answer is a header). */
function sendAuth(client: EtcdClient, what: string, path: string, body: object): Promise<string> {
  return client.call(
    what,
    path,
    body,
    (json) => decodeHeaderRevision(json as Record<string, unknown>, what),
    { idempotent: false },
  );
}
