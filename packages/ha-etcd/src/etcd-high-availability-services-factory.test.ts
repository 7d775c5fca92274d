import { ErrorCodes } from "@sluice/core";
import { createTestPki, type TestCertificate, type TestPki } from "@sluice/core/test-certificates";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { HighAvailabilityUnavailableError } from "@sluice/runtime-api";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  confirmingContender,
  describeWithEtcd,
  type EtcdFixture,
  leaderStandbyAndObserver,
  recordingRetrieval,
} from "./test-support/ha-fixture.js";

/**
 * Two job managers' services and a task manager's retrieval: the first is elected, the
 * retrieval finds its address, and a job graph it stores is what the standby reads.
 */
async function electFindAndStore(fixture: EtcdFixture): Promise<void> {
  const first = await fixture.services();
  const standby = await fixture.services();
  const { seen, errors, retriever } = await recordingRetrieval(standby);
  const leader = confirmingContender(first, "ws://10.0.0.1:6123");
  await first.getJobManagerLeaderElection().startLeaderElection(leader);
  await waitFor(() => seen.at(-1)?.address === "ws://10.0.0.1:6123", {
    what: "the leader's address, retrieved",
    timeoutMs: 15_000,
  });
  expect(seen.at(-1)?.fencingToken).toBe(leader.token);
  await first.getJobGraphStore().putJobGraph("job-1", { records: 42 });
  expect(await standby.getJobGraphStore().recoverJobGraph("job-1")).toEqual({ records: 42 });
  expect(errors).toEqual([]);
  await retriever.stop();
}

describeWithEtcd(
  "the etcd high-availability services on an etcd that requires TLS client certificates",
  (fixture) => {
    // Another authority, and a client certificate it signed.
    let foreign: TestPki;
    let foreignClient: TestCertificate;
    beforeAll(() => {
      foreign = createTestPki("etcd-foreign");
      foreignClient = foreign.issue("job-manager");
    });
    afterAll(() => foreign?.remove());
    // A request that hung would fail the test by its timeout long before this lease-ttl.
    const patient = { "high-availability.etcd.lease-ttl": "120s" };

    it("elects a leader, lets a standby retrieve it and round-trips a job graph over https with a client certificate", async () => {
      expect(fixture.etcd().endpoint).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      await electFindAndStore(fixture);
    }, 60_000);

    it("refuses to start without a client certificate, naming the endpoint and etcd's TLS alert, at once", async () => {
      const endpoint = fixture.etcd().endpoint;
      const error = await expectRejection(
        fixture.services({
          ...patient,
          "high-availability.etcd.ssl.cert": undefined,
          "high-availability.etcd.ssl.key": undefined,
        }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        `connecting failed against etcd at ${endpoint}: ${endpoint}: etcd refused the TLS connection: `,
        "alert bad certificate",
        "no client certificate was presented",
        "high-availability.etcd.ssl.cert = (not set)",
      );
      expect(error.message).not.toMatch(/no answer within|could not connect within/);
    }, 30_000);

    it("refuses a client certificate that etcd's authority did not sign, naming the endpoint and etcd's TLS alert", async () => {
      const endpoint = fixture.etcd().endpoint;
      await expectRejection(
        fixture.services({
          ...patient,
          "high-availability.etcd.ssl.cert": foreignClient.cert,
          "high-availability.etcd.ssl.key": foreignClient.key,
        }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        `${endpoint}: etcd refused the TLS connection: `,
        "it did not accept this client's certificate",
        `high-availability.etcd.ssl.cert = ${foreignClient.cert}`,
      );
    }, 30_000);

    it("refuses an authority that did not sign etcd's certificate, naming the endpoint, the verification error and the file", async () => {
      const endpoint = fixture.etcd().endpoint;
      await expectRejection(
        fixture.services({ ...patient, "high-availability.etcd.ssl.ca": foreign.caCert }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        `connecting failed against etcd at ${endpoint}: ${endpoint}: etcd's TLS certificate is not trusted: unable to verify the first certificate (UNABLE_TO_VERIFY_LEAF_SIGNATURE)`,
        `high-availability.etcd.ssl.ca = ${foreign.caCert}`,
      );
    }, 30_000);

    it("refuses an etcd certificate that does not name the endpoint's host", async () => {
      // The test certificate names the loopback addresses only, no host name.
      const endpoint = fixture.etcd().endpoint.replace("127.0.0.1", "localhost");
      await expectRejection(
        fixture.services({ ...patient, "high-availability.etcd.endpoints": endpoint }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        `${endpoint}: etcd's TLS certificate is not trusted: Hostname/IP does not match certificate's altnames`,
        "(ERR_TLS_CERT_ALTNAME_INVALID)",
      );
    }, 30_000);
  },
  { tls: true },
);

describeWithEtcd(
  "the etcd high-availability services as a user of etcd's authentication",
  (fixture) => {
    it("elects, retrieves and stores as a user whose role grants only the cluster's keys, and warns that http:// sends the password in the clear", async () => {
      await electFindAndStore(fixture);
      expect(fixture.warnings).toContain(
        "high-availability.etcd.password is sent to etcd in the clear: high-availability.etcd.endpoints are http:// endpoints; use https://",
      );
      // The operator's view: the user's keys are where its role allows.
      const { kvs } = await fixture
        .kv(`/sluice/${fixture.clusterId()}/`)
        .range("reading the cluster's keys", { key: "jobgraphs/", prefix: true });
      expect(kvs.map((kv) => kv.key)).toEqual(["jobgraphs/job-1"]);
    }, 60_000);

    it("authenticates again once etcd forgot its tokens: the leader goes on writing and the retrieval's watch, created again, follows the next leader", async () => {
      // A lease that outlives etcd's restart: the first job manager stays leader through it.
      const lease = { "high-availability.etcd.lease-ttl": "15s" };
      const { first, second, a, seen, errors, retriever } = await leaderStandbyAndObserver(
        fixture,
        lease,
      );
      await fixture.dropAuthTokens();
      // The restart cuts every watch stream: each is created again with a token etcd forgot.
      await fixture.etcd().kill();
      await fixture.etcd().restart();
      await first.getJobGraphStore().putJobGraph("job-1", { after: "restart" });
      expect(await second.getJobGraphStore().recoverJobGraph("job-1")).toEqual({
        after: "restart",
      });
      await first.close();
      await waitFor(() => seen.at(-1)?.address === "ws://b:2", {
        what: "the next leader's address",
        timeoutMs: 20_000,
      });
      expect(a.revocations).toBe(1);
      expect(errors).toEqual([]);
      await retriever.stop();
    }, 90_000);

    it("refuses a wrong password with etcd's reason, naming the user and the endpoint", async () => {
      const endpoint = fixture.etcd().endpoint;
      await expectRejection(
        fixture.services({ "high-availability.etcd.password": "wrong" }),
        HighAvailabilityUnavailableError,
        ErrorCodes.HA_UNAVAILABLE,
        `authenticating as 'sluice' (connecting) failed against etcd at ${endpoint}: ${endpoint}: etcd answered with an error: etcdserver: authentication failed, invalid user ID or password`,
      );
    }, 30_000);
  },
  { auth: true },
);
