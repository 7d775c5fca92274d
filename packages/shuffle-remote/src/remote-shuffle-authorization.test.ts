/**
 * Who may register as a shuffle worker, and who may store or query partitions on one: tried
 * from outside with hand-made frames over real sockets, as an attacker without credentials would.
 */
import { randomBytes } from "node:crypto";
import { ErrorCodes, ExecutionAttemptID } from "@sluice/core";
import { createTestPki, type TestPki } from "@sluice/core/test-certificates";
import { createResultPartitionDeploymentDescriptor } from "@sluice/runtime-api";
import { connectRawTcp, type RawPeer, rawTcpPeer } from "@sluice/shuffle-tck/transport";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createRemoteShuffleDescriptor } from "./remote-shuffle-descriptor.js";
import { FrameType } from "./remote-shuffle-messages.js";
import { ShuffleWorker } from "./shuffle-worker.js";
import {
  encodeFrame,
  errorFrameOf,
  jsonFrame,
  openFrame,
  statFrame,
  strangerRegistration,
} from "./test-support/frames.js";
import {
  filesOf,
  partitionDescriptor,
  RemoteShuffleHarness,
  readPartition,
  recordsOf,
  register,
  waitFor,
  writePartition,
} from "./test-support/remote-shuffle-harness.js";

let harness: RemoteShuffleHarness | undefined;
const peers: RawPeer[] = [];

afterEach(async () => {
  for (const peer of peers.splice(0)) peer.destroy();
  await harness?.close();
  harness = undefined;
});

async function connect(port: number): Promise<RawPeer> {
  const peer = rawTcpPeer(await connectRawTcp(port));
  peers.push(peer);
  return peer;
}

/** Sends `bytes` and resolves with the error the port answered before closing. */
async function refusal(port: number, bytes: Buffer) {
  const peer = await connect(port);
  await peer.send(bytes);
  await peer.closed;
  return {
    error: errorFrameOf(Buffer.concat(peer.received)),
    received: Buffer.concat(peer.received),
  };
}

describe("the shuffle manager's registrations", () => {
  it("refuses a REGISTER that reuses a live worker's host and ports with another incarnation: the live worker keeps its place and partitions, the impostor gets none", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const stored = await register(harness, partition);
    await writePartition(environment, partition, stored, [recordsOf(0, 1_000)]);
    const { host, rpcPort, dataPort } = worker.address;

    const { error } = await refusal(
      harness.master.managerPort,
      jsonFrame(FrameType.REGISTER, strangerRegistration({ host, rpcPort, dataPort })),
    );
    expect(error?.code).toBe(ErrorCodes.ILLEGAL_STATE);
    expect(error?.message).toContain(`${host}:${rpcPort}`);
    // Nothing of the live worker leaked to the impostor.
    expect(error?.message).not.toContain(worker.address.incarnation);

    expect(harness.master.liveWorkers()).toEqual([worker.address]);
    expect(harness.lost).toEqual([]);
    expect(worker.isRegistered()).toBe(true);
    expect(worker.storedPartitions()).toHaveLength(1);
    // New partitions still go to the live worker, which serves the stored one.
    const next = await register(harness, partitionDescriptor(1));
    expect(next.plugin.worker).toEqual(worker.address);
    const read = await readPartition(environment, partition, stored, 1);
    expect(read).toEqual([Buffer.concat(recordsOf(0, 1_000))]);
  }, 60_000);

  it("refuses a REGISTER that names a live worker's incarnation without its secret, and keeps the worker's connection", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const registrations: string[] = [];
    harness.master.onWorkerRegistered((w) => registrations.push(w.address.incarnation));
    const { error } = await refusal(
      harness.master.managerPort,
      jsonFrame(FrameType.REGISTER, strangerRegistration({ ...worker.address })),
    );
    expect(error?.code).toBe(ErrorCodes.PROTOCOL);
    expect(error?.message).toContain("secret");
    expect(registrations).toEqual([]);
    expect(worker.isRegistered()).toBe(true);
    expect(harness.master.liveWorkers()).toEqual([worker.address]);
  }, 30_000);

  it("admits a worker restarted on the same address once the old start is lost, and reports the old start's partitions", async () => {
    harness = await RemoteShuffleHarness.start();
    const before = await harness.startWorker();
    const partition = await register(harness, partitionDescriptor(1));
    await before.close();
    const after = await harness.startWorker({
      "remote-shuffle.worker.rpc-port": before.address.rpcPort,
      "remote-shuffle.worker.data-port": before.address.dataPort,
    });
    await waitFor(() => harness?.lost.length === 1, "the report of the lost partition");
    expect(harness.lost[0]?.map(String)).toEqual([partition.resultPartitionId.toString()]);
    expect(harness.master.liveWorkers()).toEqual([after.address]);
  }, 30_000);

  it("releases a stored partition that the shuffle manager a worker registers with does not know", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await writePartition(environment, partition, descriptor, [recordsOf(0, 500)]);
    expect(worker.storedPartitions()).toHaveLength(1);
    // A new shuffle manager (a job manager that restarted) knows no partition: when the worker
    // registers with it and reports what it stores, the manager releases what no job will.
    const first = harness;
    const managerPort = first.master.managerPort;
    await first.master.close();
    try {
      harness = await RemoteShuffleHarness.start({
        "remote-shuffle.manager.rpc-port": managerPort,
      });
      await waitFor(() => worker.storedPartitions().length === 0, "the release");
      await waitFor(() => filesOf(worker).length === 0, "the files' deletion");
    } finally {
      await first.close();
    }
  }, 60_000);
});

describe("a shuffle worker's pushes and checksum queries", () => {
  it("refuses a push into a partition the manager never assigned: nothing is stored, no session is held", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const assigned = await register(harness, partition);
    // A descriptor naming the worker, with an access token nobody made.
    const forged = createRemoteShuffleDescriptor(assigned.resultPartitionId, worker.address, {
      jobId: assigned.plugin.access.jobId,
      token: randomBytes(32).toString("hex"),
    });
    await expect(
      writePartition(environment, partition, forged, [recordsOf(0, 50_000)]),
    ).rejects.toMatchObject({ code: ErrorCodes.PARTITION_CONNECTION });
    expect(worker.storedPartitions()).toEqual([]);
    expect(worker.numberOfPushSessions).toBe(0);
    expect(filesOf(worker)).toEqual([]);
    // The partition the manager did assign is still accepted.
    await writePartition(environment, partition, assigned, [recordsOf(0, 100)]);
    expect(worker.storedPartitions()).toHaveLength(1);
  }, 60_000);

  it("refuses a push whose token belongs to another job or partition", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const partition = partitionDescriptor(1);
    const assigned = await register(harness, partition);
    const other = await register(harness, partitionDescriptor(1));
    const port = worker.address.rpcPort;
    const access = (json: Record<string, unknown>) =>
      (json.shuffleDescriptor as { plugin: { access: Record<string, unknown> } }).plugin.access;
    for (const bytes of [
      openFrame(partition, assigned, (json) => {
        access(json).jobId = randomBytes(16).toString("hex");
      }),
      openFrame(partition, assigned, (json) => {
        access(json).token = other.plugin.access.token;
      }),
    ]) {
      const { error } = await refusal(port, bytes);
      expect(error?.code).toBe(ErrorCodes.PROTOCOL);
      expect(error?.message).toContain("access token");
    }
    expect(worker.numberOfPushSessions + worker.numberOfWaitingPushes).toBe(0);
  }, 30_000);

  it("never tells a peer its incarnation: refused OPENs and STATs, and a STAT for another start, name only its address", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const partition = partitionDescriptor(1);
    const assigned = await register(harness, partition);
    const { incarnation } = worker.address;
    const port = worker.address.rpcPort;
    const stale = createRemoteShuffleDescriptor(
      assigned.resultPartitionId,
      { ...worker.address, incarnation: randomBytes(16).toString("hex") },
      assigned.plugin.access,
    );
    const attempts: [string, Buffer, string][] = [
      [
        "STAT without a valid token",
        statFrame(assigned, (j) => {
          j.token = "a".repeat(64);
        }),
        ErrorCodes.PROTOCOL,
      ],
      ["OPEN for another start", openFrame(partition, stale), ErrorCodes.PARTITION_NOT_FOUND],
      [
        "a first frame of the wrong type",
        encodeFrame(FrameType.DATA, Buffer.alloc(4)),
        ErrorCodes.PROTOCOL,
      ],
      ["OPEN not JSON", jsonFrame(FrameType.OPEN, "?"), ErrorCodes.PROTOCOL],
    ];
    for (const [what, bytes, code] of attempts) {
      const { error, received } = await refusal(port, bytes);
      expect(error?.code, what).toBe(code);
      expect(received.toString("latin1"), what).not.toContain(incarnation);
    }
    // A well-formed STAT for another start is answered "not here", without saying who is.
    const peer = await connect(port);
    await peer.send(statFrame(stale));
    await waitFor(() => peer.received.length > 0, "the STAT reply");
    const reply = Buffer.concat(peer.received);
    expect(reply.toString("latin1")).toContain(ErrorCodes.PARTITION_NOT_FOUND);
    expect(reply.toString("latin1")).not.toContain(incarnation);
  }, 30_000);

  it("answers a checksum query only for the partition and job its token names", async () => {
    harness = await RemoteShuffleHarness.start();
    const worker = await harness.startWorker();
    const environment = await harness.startEnvironment();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    await writePartition(environment, partition, descriptor, [recordsOf(0, 100)]);
    const other = await register(harness, partitionDescriptor(1));
    const { error } = await refusal(
      worker.address.rpcPort,
      statFrame(descriptor, (json) => {
        json.token = other.plugin.access.token;
      }),
    );
    expect(error?.code).toBe(ErrorCodes.PROTOCOL);
    const peer = await connect(worker.address.rpcPort);
    await peer.send(statFrame(descriptor));
    await waitFor(() => peer.received.length > 0, "the STAT reply");
    expect(Buffer.concat(peer.received).toString()).toContain('"checksum"');
  }, 30_000);
});

describe("the remote shuffle's ports with internal TLS (security.ssl.internal.*)", () => {
  let pki: TestPki;
  let stranger: TestPki;

  beforeAll(() => {
    pki = createTestPki("remote-auth");
    stranger = createTestPki("remote-auth-stranger");
  }, 30_000);
  afterAll(() => {
    pki?.remove();
    stranger?.remove();
  });

  function tls(ca: TestPki, name: string): Record<string, unknown> {
    const { key, cert } = ca.issue(name);
    return {
      "security.ssl.internal.enabled": true,
      "security.ssl.internal.key": key,
      "security.ssl.internal.cert": cert,
      "security.ssl.internal.ca": ca.caCert,
    };
  }

  it("lets no worker without a certificate of the internal CA register, so no partition is ever assigned to one", async () => {
    harness = await RemoteShuffleHarness.start(tls(pki, "cluster"));
    const worker = await harness.startWorker();
    // A worker process whose certificate another CA signed, and a plaintext peer.
    const impostor = await ShuffleWorker.start(
      harness.config({
        ...tls(stranger, "impostor"),
        "security.ssl.internal.ca": stranger.caCert,
      }),
    );
    const registered: string[] = [];
    harness.master.onWorkerRegistered((w) => registered.push(w.address.incarnation));
    try {
      const plaintext = await connect(harness.master.managerPort);
      await plaintext.send(jsonFrame(FrameType.REGISTER, strangerRegistration()));
      await plaintext.closed;
      // A TLS server never answers plaintext: no frame came back, only the close.
      expect(errorFrameOf(Buffer.concat(plaintext.received))).toBeUndefined();
      // The impostor keeps trying every half second: a few of its attempts must all fail.
      const deadline = Date.now() + 1_500;
      await waitFor(() => Date.now() > deadline || registered.length > 0, "the impostor's tries");
      expect(registered).toEqual([]);
      expect(impostor.isRegistered()).toBe(false);
      expect(harness.master.liveWorkers()).toEqual([worker.address]);
      const assigned = await Promise.all(
        [0, 1, 2, 3].map(() => register(harness as RemoteShuffleHarness, partitionDescriptor(1))),
      );
      for (const descriptor of assigned) expect(descriptor.plugin.worker).toEqual(worker.address);
    } finally {
      await impostor.close();
    }
  }, 60_000);

  it("keeps TLS on the shuffle manager's port when taskmanager.data.ssl.enabled turns it off for data: registrations carry the workers' secrets", async () => {
    harness = await RemoteShuffleHarness.start({
      ...tls(pki, "cluster"),
      "taskmanager.data.ssl.enabled": false,
    });
    const worker = await harness.startWorker();
    const registered: string[] = [];
    harness.master.onWorkerRegistered((w) => registered.push(w.address.incarnation));
    const plaintext = await connect(harness.master.managerPort);
    await plaintext.send(jsonFrame(FrameType.REGISTER, strangerRegistration()));
    await plaintext.closed;
    expect(errorFrameOf(Buffer.concat(plaintext.received))).toBeUndefined();
    expect(registered).toEqual([]);
    // The worker's own port serves plaintext, as the data port does.
    const { error } = await refusal(worker.address.rpcPort, jsonFrame(FrameType.OPEN, "null"));
    expect(error?.code).toBe(ErrorCodes.PROTOCOL);
  }, 60_000);

  it("refuses a producer whose certificate another CA signed on the worker's port, however valid its descriptor", async () => {
    harness = await RemoteShuffleHarness.start(tls(pki, "cluster"));
    const worker = await harness.startWorker();
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const outsider = await harness.startEnvironment({
      ...tls(stranger, "outsider"),
      "security.ssl.internal.ca": stranger.caCert,
    });
    const [writer] = outsider.createResultPartitionWriters(
      outsider.createShuffleIOOwnerContext("Producer", new ExecutionAttemptID()),
      [createResultPartitionDeploymentDescriptor(partition, descriptor, 128)],
    );
    if (writer === undefined) throw new Error("no writer");
    writer.setup();
    await waitFor(() => writer.getFailureCause() !== undefined, "the refusal");
    expect(writer.getFailureCause()).toMatchObject({ code: ErrorCodes.PARTITION_CONNECTION });
    writer.close();
    expect(worker.numberOfPushSessions + worker.numberOfWaitingPushes).toBe(0);
  }, 60_000);
});
