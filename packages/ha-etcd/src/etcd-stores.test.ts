import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  ConfigurationError,
  ErrorCodes,
  IllegalArgumentError,
  IllegalStateError,
} from "@sluice/core";
import { expectRejection, waitFor } from "@sluice/core/testing";
import {
  FencingTokenError,
  HighAvailabilityStateError,
  HighAvailabilityUnavailableError,
  readableConfigOf,
} from "@sluice/runtime-api";
import { afterEach, expect, it } from "vitest";
import type { EtcdHighAvailabilityServices } from "./etcd-high-availability-services.js";
import { EtcdHighAvailabilityServicesFactory } from "./etcd-high-availability-services-factory.js";
import {
  describeWithEtcd,
  type EtcdFixture,
  RecordingContender,
} from "./test-support/ha-fixture.js";

/** Services whose election this process leads. */
async function leader(fixture: EtcdFixture): Promise<EtcdHighAvailabilityServices> {
  const services = await fixture.services();
  const contender = new RecordingContender();
  await services.getJobManagerLeaderElection().startLeaderElection(contender);
  await waitFor(() => contender.leading, { what: "leadership", timeoutMs: 15_000 });
  return services;
}

async function pointers(
  fixture: EtcdFixture,
  services: EtcdHighAvailabilityServices,
): Promise<Record<string, string>> {
  const { kvs } = await fixture.kv(services.keyPrefix).range("reading", { key: "", prefix: true });
  return Object.fromEntries(kvs.map((kv) => [kv.key, kv.value]));
}

const outsideFolders: string[] = [];
afterEach(() => {
  for (const folder of outsideFolders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A file outside every storage folder (a user's file that a forged pointer names). */
function outsideFile(content: unknown): string {
  const folder = mkdtempSync(path.join(tmpdir(), "sluice-outside-"));
  outsideFolders.push(folder);
  const file = path.join(folder, "victim.json");
  writeFileSync(file, JSON.stringify(content));
  return file;
}

describeWithEtcd("the etcd high-availability stores on a real etcd", (fixture) => {
  it("keeps job graphs as files under the storage folder with their paths in etcd", async () => {
    const services = await leader(fixture);
    const store = services.getJobGraphStore();
    expect(await store.recoverJobGraph("job-a")).toBeUndefined();
    await store.putJobGraph("job-a", { name: "a", vertices: [1, 2] });
    await store.putJobGraph("job-b", { name: "b" });
    await store.putJobGraph("job-a", { name: "a", vertices: [1, 2, 3] });
    expect(await store.getJobIds()).toEqual(["job-a", "job-b"]);
    const keys = await pointers(fixture, services);
    const file = keys["jobgraphs/job-a"] as string;
    expect(file.startsWith(path.join(services.storageFolder, "jobgraphs"))).toBe(true);
    // Only the replacement's file is left: the replaced one was removed.
    expect(readdirSync(path.dirname(file)).filter((f) => f.startsWith("job-a-"))).toHaveLength(1);

    // A standby, once leader, recovers what the first leader stored.
    await services.close();
    const next = await leader(fixture);
    expect(await next.getJobGraphStore().recoverJobGraph("job-a")).toEqual({
      name: "a",
      vertices: [1, 2, 3],
    });
    await next.getJobGraphStore().removeJobGraph("job-a");
    expect(await next.getJobGraphStore().getJobIds()).toEqual(["job-b"]);
    expect(existsSync(file)).toBe(false);
  }, 60_000);

  it("refuses writes from a job manager that does not lead", async () => {
    const first = await leader(fixture);
    const standby = await fixture.services();
    await standby.getJobManagerLeaderElection().startLeaderElection(new RecordingContender());
    await expectRejection(
      standby.getJobGraphStore().putJobGraph("job-a", {}),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
      "storing the job graph of job-a",
      "not the leader",
    );
    await expectRejection(
      standby.createCheckpointIDCounter("job-a").getAndIncrement(),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
    await expectRejection(
      standby.createCompletedCheckpointStore("job-a", 1).addCheckpoint({
        checkpointId: 1n,
        timestamp: 1,
        externalPointer: "/x/_metadata",
      }),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
    // Reads are fine for anyone; nothing was written.
    expect(await standby.getJobGraphStore().getJobIds()).toEqual([]);
    expect(await first.getJobGraphStore().getJobIds()).toEqual([]);
    expect(readdirSync(fixture.storageDir())).not.toContain(fixture.clusterId());
  }, 60_000);

  it("retains the newest checkpoints and hands back the subsumed ones", async () => {
    const services = await leader(fixture);
    const store = services.createCompletedCheckpointStore("job-a", 2);
    const checkpoint = (id: bigint) => ({
      checkpointId: id,
      timestamp: Number(id) * 1000,
      externalPointer: `/checkpoints/chk-${id}/_metadata`,
      details: { records: Number(id) * 10 },
    });
    expect(await store.getLatestCheckpoint()).toBeUndefined();
    expect(await store.addCheckpoint(checkpoint(1n))).toEqual([]);
    expect(await store.addCheckpoint(checkpoint(2n))).toEqual([]);
    expect(await store.addCheckpoint(checkpoint(10n))).toEqual([checkpoint(1n)]);
    expect(await store.getAllCheckpoints()).toEqual([checkpoint(2n), checkpoint(10n)]);
    await expectRejection(
      store.addCheckpoint(checkpoint(9n)),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "not newer than the stored checkpoint 10",
    );
    // Id order, not string order: 10 is newer than 2 and 9.
    expect((await store.getLatestCheckpoint())?.checkpointId).toBe(10n);
    const folder = path.join(services.storageFolder, "checkpoints", "job-a");
    expect(readdirSync(folder).sort()).toHaveLength(2);

    // A new leader restores from the same latest checkpoint.
    await services.close();
    const next = await leader(fixture);
    const recovered = next.createCompletedCheckpointStore("job-a", 2);
    expect(await recovered.getLatestCheckpoint()).toEqual(checkpoint(10n));
    await recovered.shutdown(false);
    expect(await recovered.getAllCheckpoints()).toHaveLength(2);
    await recovered.shutdown(true);
    expect(await recovered.getAllCheckpoints()).toEqual([]);
    expect(existsSync(folder)).toBe(false);
  }, 60_000);

  it("names the key and file of a damaged checkpoint record", async () => {
    const services = await leader(fixture);
    const store = services.createCompletedCheckpointStore("job-a", 1);
    await store.addCheckpoint({ checkpointId: 3n, timestamp: 0, externalPointer: "/m" });
    const file = (await pointers(fixture, services))[
      "checkpoints/job-a/00000000000000000003"
    ] as string;
    writeFileSync(file, "{ not json");
    await expectRejection(
      store.getLatestCheckpoint(),
      HighAvailabilityStateError,
      ErrorCodes.HA_STATE,
      "checkpoints/job-a/00000000000000000003",
      file,
      "damaged",
    );
  }, 60_000);

  it("refuses a job graph pointer outside the cluster's folder, and reads or deletes nothing there", async () => {
    const services = await leader(fixture);
    const store = services.getJobGraphStore();
    await store.putJobGraph("job-a", { name: "a" });
    const victim = outsideFile({ jobId: "job-x", jobGraph: { stolen: true } });
    const jobgraphs = path.join(services.storageFolder, "jobgraphs");
    const link = path.join(jobgraphs, "job-x-link.json");
    symlinkSync(victim, link);
    const admin = fixture.kv(services.keyPrefix);
    for (const pointer of [
      victim,
      // Inside by its prefix, outside once `..` is resolved.
      `${jobgraphs}/${path.relative(jobgraphs, victim)}`,
      // Inside by its path, outside once the symbolic link is resolved.
      link,
    ]) {
      await admin.put("pointing outside", { key: "jobgraphs/job-x", value: pointer });
      for (const attempt of [
        () => store.recoverJobGraph("job-x"),
        () => store.removeJobGraph("job-x"),
        () => store.putJobGraph("job-x", { name: "x" }),
      ]) {
        await expectRejection(
          attempt(),
          HighAvailabilityStateError,
          ErrorCodes.HA_STATE,
          "etcd key jobgraphs/job-x",
          pointer,
          "is outside",
          jobgraphs,
        );
      }
      expect(readFileSync(victim, "utf8")).toContain("stolen");
      expect((await admin.get("reading", "jobgraphs/job-x"))?.value).toBe(pointer);
    }
    expect(await store.recoverJobGraph("job-a")).toEqual({ name: "a" });
  }, 60_000);

  it("refuses a checkpoint pointer outside the job's folder, and deletes nothing there", async () => {
    const services = await leader(fixture);
    const store = services.createCompletedCheckpointStore("job-a", 1);
    const checkpoint = (id: bigint) => ({
      checkpointId: id,
      timestamp: 1,
      externalPointer: `/checkpoints/chk-${id}/_metadata`,
    });
    await store.addCheckpoint(checkpoint(1n));
    const admin = fixture.kv(services.keyPrefix);
    const record = { checkpointId: "2", timestamp: 1, externalPointer: "/x/_metadata" };
    const victim = outsideFile(record);
    // Another job's folder is inside the cluster's, but not this job's.
    const otherJob = path.join(services.storageFolder, "checkpoints", "job-b", "r.json");
    await services.createCompletedCheckpointStore("job-b", 1).addCheckpoint(checkpoint(5n));
    writeFileSync(otherJob, JSON.stringify(record));
    const key = "checkpoints/job-a/00000000000000000002";
    for (const pointer of [victim, otherJob]) {
      await admin.put("pointing outside", { key, value: pointer });
      await expectRejection(
        store.getLatestCheckpoint(),
        HighAvailabilityStateError,
        ErrorCodes.HA_STATE,
        `etcd key ${key}`,
        pointer,
        "is outside",
      );
      // Adding checkpoint 3 would drop 1 and 2 (one is retained): refused before any write.
      await expectRejection(
        store.addCheckpoint(checkpoint(3n)),
        HighAvailabilityStateError,
        ErrorCodes.HA_STATE,
        pointer,
      );
      expect(existsSync(pointer)).toBe(true);
      expect((await admin.get("reading", key))?.value).toBe(pointer);
      expect(await admin.get("reading", "checkpoints/job-a/00000000000000000003")).toBeUndefined();
    }
    await expectRejection(
      store.addCheckpoint({ ...checkpoint(4n), externalPointer: "chk-4/_metadata" }),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      "must be an absolute path",
    );
  }, 60_000);

  it("hands out checkpoint ids once, across leaders", async () => {
    const services = await leader(fixture);
    const counter = services.createCheckpointIDCounter("job-a");
    expect(await counter.get()).toBe(1n);
    const ids = await Promise.all([1, 2, 3, 4, 5].map(() => counter.getAndIncrement()));
    expect([...ids].sort((a, b) => Number(a - b))).toEqual([1n, 2n, 3n, 4n, 5n]);
    await services.close();
    const next = await leader(fixture);
    const continued = next.createCheckpointIDCounter("job-a");
    expect(await continued.getAndIncrement()).toBe(6n);
    await continued.setCount(100n);
    expect(await continued.get()).toBe(100n);
    await continued.shutdown(true);
    expect(await continued.get()).toBe(1n);
  }, 60_000);

  it("keeps job results across leaders, dirty then clean, fenced", async () => {
    const services = await leader(fixture);
    const results = services.getJobResultStore();
    const entry = {
      jobId: "job-a",
      status: "CANCELED",
      timestamp: 7,
      details: { by: "user" },
    } as const;
    await results.createDirtyResult(entry);
    await expectRejection(
      results.createDirtyResult({ ...entry, status: "FINISHED" }),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    // A standby cannot write, and sees what the leader stored.
    const standby = await fixture.services();
    const contender = new RecordingContender();
    await standby.getJobManagerLeaderElection().startLeaderElection(contender);
    await expectRejection(
      standby.getJobResultStore().markResultAsClean("job-a"),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
    expect(await standby.getJobResultStore().getDirtyResults()).toEqual([entry]);
    // The leader resigns: the standby leads and finishes the cleanup.
    await services.close();
    await waitFor(() => contender.leading, { what: "leadership", timeoutMs: 15_000 });
    const continued = standby.getJobResultStore();
    expect(await continued.hasDirtyJobResultEntry("job-a")).toBe(true);
    await continued.markResultAsClean("job-a");
    expect(await continued.hasCleanJobResultEntry("job-a")).toBe(true);
    expect(await continued.getDirtyResults()).toEqual([]);
    expect(await continued.getJobResult("job-a")).toEqual(entry);
    expect(await continued.hasJobResultEntry("job-b")).toBe(false);
    await standby.close();
  }, 60_000);

  it("keeps clusters apart by high-availability.cluster-id", async () => {
    const a = await leader(fixture);
    const b = await fixture.services({ "high-availability.cluster-id": "/other/cluster" });
    const contender = new RecordingContender();
    await b.getJobManagerLeaderElection().startLeaderElection(contender);
    // Its own election: it leads too, as the only job manager of its cluster.
    await waitFor(() => contender.leading, {
      what: "the other cluster's leader",
      timeoutMs: 15_000,
    });
    await a.getJobGraphStore().putJobGraph("job-a", { cluster: "a" });
    await b.getJobGraphStore().putJobGraph("job-a", { cluster: "b" });
    expect(await a.getJobGraphStore().recoverJobGraph("job-a")).toEqual({ cluster: "a" });
    expect(await b.getJobGraphStore().recoverJobGraph("job-a")).toEqual({ cluster: "b" });
    expect(b.keyPrefix).toBe("/sluice/other/cluster/");
    expect(b.storageFolder).toBe(path.join(fixture.storageDir(), "other", "cluster"));
    await b.closeAndCleanupAllData();
    expect(existsSync(b.storageFolder)).toBe(false);
    expect(await a.getJobGraphStore().getJobIds()).toEqual(["job-a"]);
  }, 60_000);

  it("rejects job ids that cannot be keys or file names", async () => {
    const services = await leader(fixture);
    expect(() => services.createCheckpointIDCounter("../x")).toThrow(IllegalArgumentError);
    await expectRejection(
      services.getJobGraphStore().putJobGraph("a/b", {}),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
      '"a/b"',
    );
  }, 60_000);
});

it("says which key is missing, and which etcd it cannot reach", async () => {
  const factory = new EtcdHighAvailabilityServicesFactory();
  await expectRejection(
    factory.createHAServices(readableConfigOf({ "high-availability.storageDir": "/tmp" })),
    ConfigurationError,
    ErrorCodes.CONFIG,
    "high-availability.etcd.endpoints",
  );
  await expectRejection(
    factory.createHAServices(
      readableConfigOf({ "high-availability.etcd.endpoints": "http://127.0.0.1:1" }),
    ),
    ConfigurationError,
    ErrorCodes.CONFIG,
    "high-availability.storageDir",
  );
  const started = Date.now();
  await expectRejection(
    factory.createHAServices(
      readableConfigOf({
        "high-availability.etcd.endpoints": "http://127.0.0.1:1",
        "high-availability.storageDir": "/tmp",
        "high-availability.etcd.lease-ttl": "1s",
      }),
    ),
    HighAvailabilityUnavailableError,
    ErrorCodes.HA_UNAVAILABLE,
    "connecting failed against etcd at http://127.0.0.1:1",
  );
  expect(Date.now() - started).toBeLessThan(15_000);
}, 30_000);
