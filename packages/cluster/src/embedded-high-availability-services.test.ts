import { ErrorCodes, IllegalArgumentError, IllegalStateError } from "@sluice/core";
import { expectRejection } from "@sluice/core/testing";
import { FencingTokenError, type LeaderInformation } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import {
  EMBEDDED_FENCING_TOKEN,
  EmbeddedHighAvailabilityServices,
} from "./embedded-high-availability-services.js";

async function leading(services: EmbeddedHighAvailabilityServices): Promise<string[]> {
  const events: string[] = [];
  await services.getJobManagerLeaderElection().startLeaderElection({
    grantLeadership: (token) => events.push(`granted ${token}`),
    revokeLeadership: () => events.push("revoked"),
    handleError: (error) => events.push(`error ${error.message}`),
  });
  await Promise.resolve();
  return events;
}

describe("the embedded high-availability services (high-availability.type: none)", () => {
  it("grants the one job manager leadership and reports its confirmed address", async () => {
    const services = new EmbeddedHighAvailabilityServices("ws://configured:6123");
    const events = await leading(services);
    expect(events).toEqual([`granted ${EMBEDDED_FENCING_TOKEN}`]);
    const seen: (LeaderInformation | undefined)[] = [];
    const before = services.getJobManagerLeaderRetriever();
    await before.start({ notifyLeaderAddress: (l) => seen.push(l), handleError: () => {} });
    await services
      .getJobManagerLeaderElection()
      .confirmLeadership(EMBEDDED_FENCING_TOKEN, "ws://confirmed:6123");
    const after = services.getJobManagerLeaderRetriever();
    await after.start({ notifyLeaderAddress: (l) => seen.push(l), handleError: () => {} });
    expect(seen.map((l) => l?.address)).toEqual(["ws://configured:6123", "ws://confirmed:6123"]);
    await services.close();
    expect(events).toEqual([`granted ${EMBEDDED_FENCING_TOKEN}`, "revoked"]);
  });

  it("keeps job graphs, the newest checkpoints and checkpoint ids in memory, fenced", async () => {
    const services = new EmbeddedHighAvailabilityServices();
    await leading(services);
    const graphs = services.getJobGraphStore();
    await graphs.putJobGraph("job", { a: 1 });
    expect(await graphs.recoverJobGraph("job")).toEqual({ a: 1 });
    const store = services.createCompletedCheckpointStore("job", 2);
    const checkpoint = (id: bigint) => ({
      checkpointId: id,
      timestamp: 0,
      externalPointer: `/${id}`,
    });
    await store.addCheckpoint(checkpoint(1n));
    await store.addCheckpoint(checkpoint(2n));
    expect(await store.addCheckpoint(checkpoint(3n))).toEqual([checkpoint(1n)]);
    expect((await store.getLatestCheckpoint())?.checkpointId).toBe(3n);
    await expectRejection(
      store.addCheckpoint(checkpoint(3n)),
      IllegalArgumentError,
      ErrorCodes.INVALID_ARGUMENT,
    );
    const counter = services.createCheckpointIDCounter("job");
    expect([await counter.getAndIncrement(), await counter.getAndIncrement()]).toEqual([1n, 2n]);
    // Once it gave up leadership, nothing is written any more.
    await services.close();
    await expectRejection(graphs.putJobGraph("job", {}), FencingTokenError, ErrorCodes.HA_FENCED);
    await expectRejection(counter.getAndIncrement(), FencingTokenError, ErrorCodes.HA_FENCED);
    expect(await graphs.getJobIds()).toEqual(["job"]);
  });

  it("keeps job results dirty, then clean, and refuses a second result for a job", async () => {
    const services = new EmbeddedHighAvailabilityServices();
    await leading(services);
    const results = services.getJobResultStore();
    const entry = { jobId: "job", status: "FINISHED", timestamp: 1 } as const;
    expect(await results.hasJobResultEntry("job")).toBe(false);
    await results.createDirtyResult(entry);
    expect(await results.getDirtyResults()).toEqual([entry]);
    expect(await results.hasDirtyJobResultEntry("job")).toBe(true);
    await expectRejection(
      results.createDirtyResult({ ...entry, status: "FAILED" }),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    await results.markResultAsClean("job");
    expect(await results.hasCleanJobResultEntry("job")).toBe(true);
    expect(await results.hasDirtyJobResultEntry("job")).toBe(false);
    expect(await results.getDirtyResults()).toEqual([]);
    expect(await results.getJobResult("job")).toEqual(entry);
    await expectRejection(
      results.markResultAsClean("other"),
      IllegalStateError,
      ErrorCodes.ILLEGAL_STATE,
    );
    await services.close();
    await expectRejection(
      results.createDirtyResult({ ...entry, jobId: "next" }),
      FencingTokenError,
      ErrorCodes.HA_FENCED,
    );
  });
});
