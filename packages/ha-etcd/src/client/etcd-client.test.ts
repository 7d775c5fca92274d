import { readFileSync } from "node:fs";
import type { ServerResponse } from "node:http";
import { ErrorCodes } from "@sluice/core";
import { createTestPki } from "@sluice/core/test-certificates";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { HighAvailabilityUnavailableError } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import {
  type FakeGateway,
  type GatewayRequest,
  header,
  startFakeGateway,
} from "../test-support/fake-gateway.js";
import { describeWithEtcd } from "../test-support/ha-fixture.js";
import { etcdUnavailableReason, startEtcd } from "../testing/index.js";
import { EtcdClient, type EtcdClientOptions } from "./etcd-client.js";
import { EtcdKv } from "./etcd-kv.js";
import { absent, createRevisionIs, modRevisionIs } from "./kv-requests.js";
import { LeaseKeeper } from "./lease-keeper.js";

const clients = new Set<EtcdClient>();
const gateways = new Set<FakeGateway>();

function client(options: Partial<EtcdClientOptions> & { endpoints: readonly string[] }) {
  const created = new EtcdClient({ requestTimeoutMs: 5000, ...options });
  clients.add(created);
  return created;
}

async function gateway(answer: (request: GatewayRequest, response: ServerResponse) => void) {
  const started = await startFakeGateway(answer);
  gateways.add(started);
  return started;
}

afterEach(async () => {
  for (const c of clients) c.close();
  clients.clear();
  await Promise.all([...gateways].map((g) => g.close()));
  gateways.clear();
});

describeWithEtcd("the etcd client on a real etcd", (fixture) => {
  it("reads, writes and deletes keys and prefixes inside its namespace only", async () => {
    const endpoints = [fixture.etcd().endpoint];
    const kv = new EtcdKv(client({ endpoints }), `/client-${fixture.clusterId()}/a/`);
    const neighbour = new EtcdKv(client({ endpoints }), `/client-${fixture.clusterId()}/a-b/`);
    await neighbour.put("writing next door", { key: "x", value: "next door" });
    expect(await kv.get("reading k1", "k1")).toBeUndefined();
    await kv.put("writing k1", { key: "k1", value: "one ✓" });
    await kv.put("writing k2", { key: "k2", value: "two" });
    await kv.put("writing j1", { key: "j1", value: "" });
    const k1 = await kv.get("reading k1", "k1");
    expect(k1).toMatchObject({ key: "k1", value: "one ✓", lease: "0" });
    expect(BigInt(k1?.createRevision as string)).toBeGreaterThan(0n);
    const prefix = await kv.range("listing k", { key: "k", prefix: true });
    expect(prefix.kvs.map((entry) => entry.key)).toEqual(["k1", "k2"]);
    const newest = await kv.range("newest", {
      key: "",
      prefix: true,
      sort: { target: "CREATE", order: "DESCEND" },
      limit: 1,
    });
    expect(newest.kvs.map((entry) => entry.key)).toEqual(["j1"]);
    const older = await kv.range("older than k2", {
      key: "",
      prefix: true,
      maxCreateRevision: (BigInt(k1?.createRevision as string) - 1n).toString(),
    });
    expect(older.kvs).toEqual([]);
    // The whole namespace: the neighbour's key (same leading bytes) is not part of it.
    expect((await kv.range("all", { key: "", prefix: true })).kvs).toHaveLength(3);
    await kv.deleteRange("deleting k", { key: "k", prefix: true });
    expect((await kv.range("all", { key: "", prefix: true })).kvs.map((e) => e.key)).toEqual([
      "j1",
    ]);
    expect((await neighbour.get("reading next door", "x"))?.value).toBe("next door");
  }, 30_000);

  it("applies a transaction only when its compares hold, else its failure branch", async () => {
    const kv = new EtcdKv(client({ endpoints: [fixture.etcd().endpoint] }), "/txn/");
    const created = await kv.txn("creating", {
      compare: [absent("counter")],
      success: [{ put: { key: "counter", value: "1" } }],
    });
    expect(created.succeeded).toBe(true);
    const again = await kv.txn("creating again", {
      compare: [absent("counter")],
      success: [{ put: { key: "counter", value: "9" } }],
      failure: [{ range: { key: "counter" } }],
    });
    expect(again.succeeded).toBe(false);
    const read = again.responses[0];
    const kvs = read !== undefined && "range" in read ? read.range.kvs : [];
    expect(kvs[0]?.value).toBe("1");
    expect(kvs[0]?.createRevision).toBe(created.revision);
    const cas = await kv.txn("compare-and-set", {
      compare: [
        createRevisionIs("counter", created.revision),
        modRevisionIs("counter", kvs[0]?.modRevision as string),
      ],
      success: [{ put: { key: "counter", value: "2" } }, { deleteRange: { key: "other" } }],
    });
    expect(cas.succeeded).toBe(true);
    expect(cas.responses).toEqual([{ put: true }, { deleteRange: { deleted: "0" } }]);
    expect((await kv.get("reading", "counter"))?.value).toBe("2");
  }, 30_000);

  it("fails over to the next endpoint when one refuses connections, and stays on the one that answered", async () => {
    const etcd = fixture.etcd().endpoint;
    const refused = "http://127.0.0.1:1";
    const kv = new EtcdKv(client({ endpoints: [refused, etcd] }), "/failover/");
    // A write may go to the next endpoint: the first never received it.
    await kv.put("writing", { key: "k", value: "v" });
    expect((await kv.get("reading", "k"))?.value).toBe("v");
    // A gateway that would answer garbage comes first now: the client keeps to the endpoint
    // that answered, so it is not asked.
    const bad = await gateway((_request, response) => response.end("not json"));
    const sticky = client({ endpoints: [refused, etcd, bad.endpoint] });
    await new EtcdKv(sticky, "/failover/").get("reading", "k");
    await new EtcdKv(sticky, "/failover/").get("reading again", "k");
    expect(bad.requests).toHaveLength(0);
  }, 30_000);

  it("sends a read that got no answer to the next endpoint, but never a write etcd may have applied", async () => {
    const etcd = fixture.etcd().endpoint;
    // Takes every request, then drops the connection without an answer: it may have applied it.
    const dropping = await gateway((_request, response) => response.socket?.destroy());
    const writes = new EtcdKv(client({ endpoints: [dropping.endpoint, etcd] }), "/no-twice/");
    await expectRejection(
      writes.put("writing k", { key: "k", value: "v" }),
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "writing k failed against etcd at",
      `${dropping.endpoint}: socket hang up`,
    );
    const direct = new EtcdKv(client({ endpoints: [etcd] }), "/no-twice/");
    expect(await direct.get("reading k", "k")).toBeUndefined();
    await direct.put("writing", { key: "r", value: "read me" });
    expect((await writes.get("reading r", "r"))?.value).toBe("read me");
    // Takes every request and never answers: a read waits out its share of the deadline there.
    const silent = await gateway(() => undefined);
    const reads = new EtcdKv(
      client({ endpoints: [silent.endpoint, etcd], requestTimeoutMs: 4000 }),
      "/no-twice/",
    );
    expect((await reads.get("reading r", "r"))?.value).toBe("read me");
    expect(dropping.requests.map((request) => request.path)).toEqual([
      "/v3/kv/put",
      "/v3/kv/range",
    ]);
    expect(silent.requests.map((request) => request.path)).toEqual(["/v3/kv/range"]);
  }, 30_000);

  it("sends no token, after asking for one once, to an etcd without authentication", async () => {
    const kv = new EtcdKv(
      client({
        endpoints: [fixture.etcd().endpoint],
        auth: { username: "sluice", password: "secret" },
      }),
      `/client-${fixture.clusterId()}/`,
    );
    await kv.put("writing", { key: "k", value: "v" });
    expect((await kv.get("reading", "k"))?.value).toBe("v");
  }, 30_000);

  it("names the operation and every endpoint when no endpoint answers", async () => {
    const kv = new EtcdKv(
      client({ endpoints: ["http://127.0.0.1:1", "http://[::1]:1"], requestTimeoutMs: 3000 }),
      "",
    );
    const error = await expectRejection(
      kv.get("reading the leader", "k"),
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "reading the leader failed against etcd at http://127.0.0.1:1,http://[::1]:1",
      "http://127.0.0.1:1: connect ECONNREFUSED",
      "http://[::1]:1: connect",
    );
    expect(error.cause).toBeInstanceOf(Error);
  }, 30_000);
});

describe.skipIf(etcdUnavailableReason() !== undefined)(
  "the etcd client on an etcd that requires TLS client certificates",
  () => {
    it("works with the authority and a client certificate, and fails without the certificate", async () => {
      const pki = createTestPki("etcd-client");
      const server = pki.issue("etcd");
      const jobManager = pki.issue("job-manager");
      const etcd = await startEtcd({ tls: { cert: server.cert, key: server.key, ca: pki.caCert } });
      try {
        expect(etcd.endpoint.startsWith("https://127.0.0.1:")).toBe(true);
        const ca = readFileSync(pki.caCert);
        const kv = new EtcdKv(
          client({
            endpoints: [etcd.endpoint],
            tls: { ca, cert: readFileSync(jobManager.cert), key: readFileSync(jobManager.key) },
          }),
          "/tls/",
        );
        await kv.put("writing over TLS", { key: "k", value: "secret" });
        expect((await kv.get("reading over TLS", "k"))?.value).toBe("secret");
        const lease = await LeaseKeeper.grant(kv.client, 5, {
          renewed: () => undefined,
          lost: () => undefined,
        });
        await lease.revoke();
        // The same authority without a client certificate: etcd closes the handshake.
        await expectRejection(
          new EtcdKv(client({ endpoints: [etcd.endpoint], tls: { ca } }), "/tls/").get(
            "reading without a certificate",
            "k",
          ),
          HighAvailabilityUnavailableError,
          ErrorCodes.HA_UNAVAILABLE,
          "reading without a certificate failed against etcd at https://127.0.0.1:",
          ": etcd refused the TLS connection: ",
          "no client certificate was presented",
        );
        // Node's own roots do not know the test authority.
        await expectRejection(
          new EtcdKv(client({ endpoints: [etcd.endpoint] }), "/tls/").get("reading", "k"),
          HighAvailabilityUnavailableError,
          ErrorCodes.HA_UNAVAILABLE,
          ": etcd's TLS certificate is not trusted: unable to verify the first certificate",
        );
      } finally {
        await etcd.stop();
        pki.remove();
      }
    }, 60_000);
  },
);

describeWithEtcd(
  "the etcd client as a user of etcd's authentication",
  (fixture) => {
    const user = () => ({ username: fixture.users().username, password: fixture.users().password });
    const namespace = () => `/sluice/${fixture.clusterId()}/`;

    it("sends a request again, with a new token, when etcd no longer knows the one it had", async () => {
      const kv = new EtcdKv(
        client({ endpoints: [fixture.etcd().endpoint], auth: user() }),
        namespace(),
      );
      await kv.put("writing", { key: "k", value: "before" });
      await fixture.dropAuthTokens();
      // The very next request on this client: nothing else renewed its token in between.
      await kv.put("writing again", { key: "k", value: "after" });
      expect((await kv.get("reading", "k"))?.value).toBe("after");
    }, 30_000);

    it("is refused outside the keys its role grants, with etcd's reason", async () => {
      const kv = new EtcdKv(
        client({ endpoints: [fixture.etcd().endpoint], auth: user() }),
        "/other/",
      );
      await expectRejection(
        kv.put("writing elsewhere", { key: "k", value: "v" }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        "writing elsewhere failed against etcd at",
        "etcdserver: permission denied",
      );
    }, 30_000);
  },
  { auth: true },
);

describe("the etcd client against a gateway that answers wrongly", () => {
  const rangeOf = (body: unknown) => (_request: GatewayRequest, response: ServerResponse) =>
    response.end(typeof body === "string" ? body : JSON.stringify(body));

  it.each([
    ["an answer that is not JSON", rangeOf("<html>busy</html>"), "the answer is not JSON"],
    [
      "an answer without a header",
      rangeOf({ kvs: [] }),
      "the range response.header must be an object",
    ],
    [
      "a revision that is a number, not a string",
      rangeOf({ header: { revision: 7 } }),
      "the range response.header.revision must be an int64 as a decimal string, got 7",
    ],
    [
      "kvs that are not an array",
      rangeOf({ header: header(3), kvs: { key: "aw==" } }),
      "the range response.kvs must be an array",
    ],
    [
      "a key that is not base64",
      rangeOf({ header: header(3), kvs: [{ key: "%%%", create_revision: "2" }] }),
      "the range response.kvs[0].key must be base64",
    ],
    [
      "a key outside the namespace",
      rangeOf({ header: header(3), kvs: [{ key: Buffer.from("/other/k").toString("base64") }] }),
      'the range response.kvs[0].key "/other/k" is outside the requested namespace "/ns/"',
    ],
    [
      "an error of etcd's",
      (_request: GatewayRequest, response: ServerResponse) => {
        response.statusCode = 400;
        response.end(JSON.stringify({ error: "etcdserver: bad thing", code: 3 }));
      },
      "etcd answered with an error: etcdserver: bad thing",
    ],
    [
      "a page that is not the gateway",
      (_request: GatewayRequest, response: ServerResponse) => {
        response.statusCode = 404;
        response.end("404 page not found\n");
      },
      "HTTP 404: 404 page not found",
    ],
    [
      "an answer larger than the limit, announced",
      rangeOf({ header: header(3), padding: "x".repeat(5000) }),
      "larger than the limit of 4096 bytes",
    ],
    [
      "an answer larger than the limit, streamed",
      (_request: GatewayRequest, response: ServerResponse) => {
        for (let i = 0; i < 10; i++) response.write("x".repeat(1000));
        response.end();
      },
      "larger than the limit of 4096 bytes",
    ],
    [
      "an answer cut off",
      (_request: GatewayRequest, response: ServerResponse) => {
        response.writeHead(200, { "content-length": "100" });
        response.write('{"header":');
        setTimeout(() => response.socket?.destroy(), 10);
      },
      "the answer was cut off",
    ],
    ["no answer at all", () => undefined, "no answer within 1000 ms"],
  ])("refuses %s, naming the operation and the endpoint", async (_name, answer, fragment) => {
    const fake = await gateway(answer);
    const kv = new EtcdKv(
      client({ endpoints: [fake.endpoint], requestTimeoutMs: 1000, maxResponseBytes: 4096 }),
      "/ns/",
    );
    await expectRejection(
      kv.get("reading /ns/k", "k"),
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      `reading /ns/k failed against etcd at ${fake.endpoint}: ${fake.endpoint}: `,
      fragment,
    );
  });

  it("refuses endpoints of both schemes, which would let a failover leave TLS", () => {
    expect(() =>
      client({ endpoints: ["https://127.0.0.1:2379", "http://127.0.0.1:2380"] }),
    ).toThrow(
      "the etcd endpoints must all be http:// or all https://, got https://127.0.0.1:2379,http://127.0.0.1:2380",
    );
  });

  it("tries a read once more when its kept-alive connection was reset before any answer, but not a write", async () => {
    let count = 0;
    const fake = await gateway((request, response) => {
      count++;
      // The second and the fourth request find their (reused) connection reset.
      if (count === 2 || count === 4) {
        response.socket?.destroy();
        return;
      }
      response.end(
        JSON.stringify(
          request.path === "/v3/kv/put"
            ? { header: header(5) }
            : { header: header(5), kvs: [{ key: Buffer.from("/ns/k").toString("base64") }] },
        ),
      );
    });
    const kv = new EtcdKv(client({ endpoints: [fake.endpoint] }), "/ns/");
    expect((await kv.get("reading", "k"))?.key).toBe("k");
    expect((await kv.get("reading again", "k"))?.key).toBe("k");
    expect(fake.requests).toHaveLength(3);
    await expectRejection(
      kv.put("writing", { key: "k", value: "v" }),
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "writing failed against etcd at",
      "socket hang up",
    );
    expect(fake.requests).toHaveLength(4);
  });

  it("refuses a transaction answer with an unknown response, and a keepalive for another lease", async () => {
    const fake = await gateway((request, response) => {
      if (request.path === "/v3/kv/txn") {
        response.end(
          JSON.stringify({ header: header(3), succeeded: true, responses: [{ other: {} }] }),
        );
      } else if (request.path === "/v3/lease/grant") {
        response.end(JSON.stringify({ header: header(3), ID: "77", TTL: "5" }));
      } else {
        response.end(JSON.stringify({ result: { header: header(3), ID: "78", TTL: "5" } }));
      }
    });
    const c = client({ endpoints: [fake.endpoint], requestTimeoutMs: 1000 });
    await expectRejection(
      new EtcdKv(c, "").txn("writing", {
        compare: [],
        success: [{ put: { key: "k", value: "" } }],
      }),
      HighAvailabilityUnavailableError,
      ErrorCodes.HA_UNAVAILABLE,
      "the txn response.responses[0] holds no known response",
    );
    const lost: string[] = [];
    let renewals = 0;
    const lease = await LeaseKeeper.grant(c, 1, {
      renewed: () => {
        renewals++;
      },
      lost: (reason) => lost.push(reason),
    });
    expect(lease.id).toBe("77");
    // The keepalive answers name lease 78: never taken as a renewal of 77.
    await waitFor(() => fake.requests.filter((r) => r.path === "/v3/lease/keepalive").length >= 2, {
      what: "two keepalives",
    });
    expect(renewals).toBe(1);
    expect(lost).toEqual([]);
    lease.stop();
  });
});
