import type { ServerResponse } from "node:http";
import { ErrorCodes } from "@sluice/core";
import { expectSluiceError, waitFor } from "@sluice/core/testing";
import { HighAvailabilityUnavailableError } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import {
  type FakeGateway,
  type GatewayRequest,
  header,
  startFakeGateway,
} from "../test-support/fake-gateway.js";
import { startGatewayProxy } from "../test-support/gateway-proxy.js";
import { describeWithEtcd } from "../test-support/ha-fixture.js";
import { type EtcdServer, etcdUnavailableReason, startEtcd } from "../testing/index.js";
import { EtcdClient } from "./etcd-client.js";
import { EtcdKv } from "./etcd-kv.js";
import type { EtcdWatcher, WatchListener } from "./etcd-watcher.js";
import type { WatchEvent } from "./gateway-json.js";

/** A listener that records what the watch told it. */
function recorder() {
  const events: WatchEvent[] = [];
  const errors: Error[] = [];
  let resyncs = 0;
  const listener: WatchListener = {
    onEvents: (batch) => events.push(...batch),
    onResync: () => {
      resyncs++;
    },
    onError: (error) => errors.push(error),
  };
  return { listener, events, errors, resyncs: () => resyncs };
}

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function kvOn(endpoint: string, options: { maxResponseBytes?: number } = {}): EtcdKv {
  const client = new EtcdClient({ endpoints: [endpoint], requestTimeoutMs: 5000, ...options });
  cleanups.push(() => client.close());
  return new EtcdKv(client, "/watch/");
}

async function watch(
  kv: EtcdKv,
  startRevision: string,
  listener: WatchListener,
): Promise<EtcdWatcher> {
  const watcher = await kv.watch(
    "watching /watch/",
    { key: "", prefix: true },
    startRevision,
    listener,
  );
  cleanups.push(() => watcher.close());
  return watcher;
}

describe.skipIf(etcdUnavailableReason() !== undefined)("a watch on a real etcd", () => {
  let etcd: EtcdServer;
  afterEach(async () => {
    await etcd?.stop();
  });

  it("reports every change once and in order across a SIGKILL and restart of etcd", async () => {
    etcd = await startEtcd();
    const kv = kvOn(etcd.endpoint);
    const { revision } = await kv
      .put("writing a0", { key: "a0", value: "before" })
      .then(() => kv.range("reading", { key: "a0" }));
    const seen = recorder();
    await watch(kv, (BigInt(revision) + 1n).toString(), seen.listener);
    await kv.put("writing a1", { key: "a1", value: "1" });
    await waitFor(() => seen.events.length === 1, { what: "the first change" });
    await etcd.kill();
    await etcd.restart();
    // Written before the watch is back: it must still see them, from the revision after a1.
    await kv.put("writing a2", { key: "a2", value: "2" });
    await kv.deleteRange("deleting a1", { key: "a1" });
    await kv.put("writing a3", { key: "a3", value: "3" });
    await waitFor(() => seen.events.length >= 4, {
      what: "the changes made after the restart",
      timeoutMs: 15_000,
    });
    await kv.put("writing a4", { key: "a4", value: "4" });
    await waitFor(() => seen.events.length >= 5, { what: "a change after the reconnect" });
    expect(seen.events.map((event) => `${event.type} ${event.kv.key}`)).toEqual([
      "PUT a1",
      "PUT a2",
      "DELETE a1",
      "PUT a3",
      "PUT a4",
    ]);
    const revisions = seen.events.map((event) => BigInt(event.kv.modRevision));
    expect([...revisions].sort((a, b) => (a < b ? -1 : 1))).toEqual(revisions);
    expect(seen.errors).toEqual([]);
  }, 60_000);

  it("creates a broken watch again from the next revision it has not reported: changes made while it was cut off arrive once", async () => {
    etcd = await startEtcd();
    const proxy = await startGatewayProxy(etcd.endpoint);
    cleanups.push(() => proxy.close());
    const direct = kvOn(etcd.endpoint);
    const { revision } = await direct.range("reading", { key: "c" });
    const seen = recorder();
    await watch(kvOn(proxy.endpoint), (BigInt(revision) + 1n).toString(), seen.listener);
    await direct.put("writing c1", { key: "c1", value: "1" });
    await waitFor(() => seen.events.length === 1, { what: "the first change" });
    proxy.cut();
    await direct.put("writing c2", { key: "c2", value: "2" });
    await direct.deleteRange("deleting c1", { key: "c1" });
    proxy.heal();
    await direct.put("writing c3", { key: "c3", value: "3" });
    await waitFor(() => seen.events.length >= 4, {
      what: "the changes made while cut off",
      timeoutMs: 15_000,
    });
    expect(seen.events.map((event) => `${event.type} ${event.kv.key}`)).toEqual([
      "PUT c1",
      "PUT c2",
      "DELETE c1",
      "PUT c3",
    ]);
    expect(seen.errors).toEqual([]);
  }, 60_000);

  it("tells its owner to read again, and goes on, when the revisions since its start were compacted", async () => {
    etcd = await startEtcd();
    const kv = kvOn(etcd.endpoint);
    await kv.put("writing", { key: "b", value: "1" });
    await kv.put("writing", { key: "b", value: "2" });
    const { revision } = await kv.range("reading", { key: "b" });
    await kv.client.call(
      "compacting",
      "/v3/kv/compaction",
      { revision, physical: true },
      () => undefined,
      { idempotent: true },
    );
    const seen = recorder();
    await watch(kv, "1", seen.listener);
    await waitFor(() => seen.resyncs() === 1, { what: "a resync" });
    await kv.put("writing", { key: "b", value: "3" });
    await waitFor(() => seen.events.some((event) => event.kv.value === "3"), {
      what: "the change after the compaction",
    });
    expect(seen.errors).toEqual([]);
  }, 60_000);
});

describeWithEtcd(
  "a watch as a user of etcd's authentication",
  (fixture) => {
    it("is created with a new token when etcd no longer knows the client's, and reports the changes after", async () => {
      const { username, password } = fixture.users();
      const client = new EtcdClient({
        endpoints: [fixture.etcd().endpoint],
        requestTimeoutMs: 5000,
        auth: { username, password },
      });
      cleanups.push(() => client.close());
      const namespace = `/sluice/${fixture.clusterId()}/`;
      const kv = new EtcdKv(client, namespace);
      const revision = await kv.put("writing a0", { key: "a0", value: "0" });
      await fixture.dropAuthTokens();
      const seen = recorder();
      // etcd answers a watch with a stale token by cancelling it: created again, once.
      await watch(kv, (BigInt(revision) + 1n).toString(), seen.listener);
      await fixture.kv(namespace).put("writing a1", { key: "a1", value: "1" });
      await waitFor(() => seen.events.length === 1, { what: "the change after the watch" });
      expect(seen.events.map((event) => `${event.type} ${event.kv.key}`)).toEqual(["PUT a1"]);
      expect(seen.errors).toEqual([]);
    }, 30_000);
  },
  { auth: true },
);

describe("a watch against a gateway that answers wrongly", () => {
  async function fake(answer: (request: GatewayRequest, response: ServerResponse) => void) {
    const gateway: FakeGateway = await startFakeGateway(answer);
    cleanups.push(() => gateway.close());
    return gateway;
  }
  const line = (result: Record<string, unknown>) => `${JSON.stringify({ result })}\n`;
  const created = line({ header: header(10), created: true });

  it("ends with an error naming the field of a malformed line, and is not created again", async () => {
    const gateway = await fake((_request, response) => {
      response.write(created);
      response.write(line({ header: header(11), events: [{ type: "PUT", kv: { key: 5 } }] }));
    });
    const seen = recorder();
    await watch(kvOn(gateway.endpoint), "2", seen.listener);
    await waitFor(() => seen.errors.length === 1, { what: "the error" });
    expectSluiceError(
      seen.errors[0],
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "watching /watch/ failed against etcd at",
      "malformed watch answer: the watch response.result.events[0].kv.key must be base64, got 5",
      gateway.endpoint,
    );
    expect(gateway.requests).toHaveLength(1);
    expect(seen.events).toEqual([]);
  });

  it("refuses a line longer than the limit before it has all of it", async () => {
    const gateway = await fake((_request, response) => {
      response.write(created);
      // Never a newline: the watch must not keep buffering.
      for (let i = 0; i < 8; i++) response.write("x".repeat(1024));
    });
    const seen = recorder();
    await watch(kvOn(gateway.endpoint, { maxResponseBytes: 4096 }), "2", seen.listener);
    await waitFor(() => seen.errors.length === 1, { what: "the error" });
    expectSluiceError(
      seen.errors[0],
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "larger than the limit of 4096 bytes",
    );
  });

  it("creates a silent watch again after its idle timeout, from the revision a progress notification reported", async () => {
    const gateway = await fake((_request, response) => {
      response.write(created);
      // A progress notification: every change up to revision 50 was sent.
      response.write(line({ header: header(50) }));
      // Then silence, as from a host that died without closing the connection.
    });
    const kv = kvOn(gateway.endpoint);
    const seen = recorder();
    const watcher = await kv.watch(
      "watching /watch/",
      { key: "", prefix: true },
      "2",
      seen.listener,
    );
    cleanups.push(() => watcher.close());
    // The idle timeout is the client's request timeout (5 s here).
    await waitFor(() => gateway.requests.length === 2, {
      what: "the watch created again",
      timeoutMs: 15_000,
    });
    const starts = gateway.requests.map(
      (request) => (request.body.create_request as { start_revision: string }).start_revision,
    );
    expect(starts).toEqual(["2", "51"]);
    expect(seen.errors).toEqual([]);
  }, 30_000);
});
