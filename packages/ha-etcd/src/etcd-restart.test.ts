import { ErrorCodes } from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import { FencingTokenError, type LeaderInformation } from "@sluice/runtime-api";
import { expect, it } from "vitest";
import { createRevisionIs } from "./client/kv-requests.js";
import { JOB_MANAGER_ELECTION_PREFIX } from "./etcd-leader-election.js";
import {
  describeWithEtcd,
  leaderStandbyAndObserver,
  RecordingContender,
} from "./test-support/ha-fixture.js";

/** How long etcd stays down: twice the fixture's 2 s lease, as a crashed and restarted etcd. */
const DOWNTIME_MS = 4000;

describeWithEtcd("the job managers' election across a SIGKILL and restart of etcd", (fixture) => {
  /** Kills etcd, lets `whileDown` run, and starts etcd again DOWNTIME_MS after the kill. */
  async function restartEtcd(whileDown: () => Promise<void>): Promise<void> {
    const killedAt = Date.now();
    await fixture.etcd().kill();
    await whileDown();
    // The downtime is the fault under test (there is nothing to poll for): wait out the rest.
    await new Promise((resolve) => setTimeout(resolve, killedAt + DOWNTIME_MS - Date.now()));
    await fixture.etcd().restart();
  }

  it("ends with exactly one leader, elected once, and refuses the old term's writes", async () => {
    const first = await fixture.services();
    const second = await fixture.services();
    const a = new RecordingContender();
    const b = new RecordingContender();
    await first.getJobManagerLeaderElection().startLeaderElection(a);
    await waitFor(() => a.leading, { what: "the first leader", timeoutMs: 15_000 });
    await second.getJobManagerLeaderElection().startLeaderElection(b);
    const admin = fixture.kv(first.keyPrefix);
    const candidates = async () =>
      (
        await admin.range("reading the election", {
          key: JOB_MANAGER_ELECTION_PREFIX,
          prefix: true,
          sort: { target: "CREATE", order: "ASCEND" },
        })
      ).kvs;
    await waitFor(async () => (await candidates()).length === 2, { what: "two candidates" });
    const [oldKey] = await candidates();
    const oldToken = a.token as string;
    expect(oldKey?.createRevision).toBe(oldToken);
    await first.getJobGraphStore().putJobGraph("job-1", { term: "old" });

    let grantsBefore = 0;
    await restartEtcd(async () => {
      // Cut off, the leader steps down on its own within a TTL.
      await waitFor(() => a.revocations === 1, {
        what: "the leader stepping down",
        timeoutMs: DOWNTIME_MS,
      });
      // Counted while etcd is down: a leader may be elected before restart() returns.
      grantsBefore = a.grants.length + b.grants.length;
    });
    await waitFor(() => a.leading || b.leading, { what: "a new leader", timeoutMs: 15_000 });
    const [leader, leaderServices, other, otherServices] = a.leading
      ? [a, first, b, second]
      : [b, second, a, first];
    const token = leader.token as string;
    const grantedAt = Date.now();
    // The leadership lasts: over a full TTL later the same contender still leads, with the only
    // grant since the restart (none revoked at once for an old renewal).
    await waitFor(() => Date.now() - grantedAt > 2500 || !leader.leading, {
      what: "a TTL of leadership",
      timeoutMs: 5000,
    });
    const story = JSON.stringify({
      a: { grants: a.grants, revocations: a.revocations },
      b: { grants: b.grants, revocations: b.revocations },
      warnings: fixture.warnings,
    });
    expect(leader.leading, story).toBe(true);
    expect(leader.token, story).toBe(token);
    expect(other.leading, story).toBe(false);
    expect(a.grants.length + b.grants.length, story).toBe(grantsBefore + 1);
    // Every candidate has one key, the leader's the oldest; the old term's key is gone.
    await waitFor(async () => (await candidates()).length === 2, {
      what: "one key per candidate",
      timeoutMs: 10_000,
    });
    const keys = await candidates();
    expect(keys[0]?.createRevision).toBe(token);
    expect(keys.map((kv) => kv.key)).not.toContain(oldKey?.key);
    // A write fenced by the old term's token is refused by etcd itself.
    const stale = await admin.txn("writing with the old term's token", {
      compare: [createRevisionIs(oldKey?.key as string, oldToken)],
      success: [{ put: { key: "jobgraphs/job-1", value: "/elsewhere" } }],
    });
    expect(stale.succeeded).toBe(false);
    await expectRejection(
      otherServices.getJobGraphStore().putJobGraph("job-1", { term: "other" }),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
    await leaderServices.getJobGraphStore().putJobGraph("job-1", { term: "new" });
    expect(await otherServices.getJobGraphStore().recoverJobGraph("job-1")).toEqual({
      term: "new",
    });
  }, 60_000);

  it("lets task managers follow the leader across the restart", async () => {
    const { a, b, seen, errors, retriever } = await leaderStandbyAndObserver(fixture);
    const oldToken = seen.at(-1)?.fencingToken;
    await restartEtcd(async () => {
      await waitFor(() => a.revocations === 1, {
        what: "the leader stepping down",
        timeoutMs: DOWNTIME_MS,
      });
    });
    // The retriever's watch comes back on its own and reports the leader elected after.
    await waitFor(() => seen.at(-1) !== undefined && seen.at(-1)?.fencingToken !== oldToken, {
      what: "the new leader's address",
      timeoutMs: 20_000,
    });
    const latest = seen.at(-1) as LeaderInformation;
    const leader = a.token === latest.fencingToken ? a : b;
    expect(leader.leading).toBe(true);
    expect(latest.address).toBe(leader === a ? "ws://a:1" : "ws://b:2");
    // etcd's restart is no error of the retrieval: it reads again until etcd answers.
    expect(errors).toEqual([]);
    await retriever.stop();
  }, 60_000);
});
