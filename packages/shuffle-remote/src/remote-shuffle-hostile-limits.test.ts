/**
 * The conformance kit's hostile-peer suite against the remote shuffle's two ports: the shuffle
 * manager's (in the job manager's ShuffleMaster) and a shuffle worker's. Both run in this process,
 * so an exception a peer provoked would fail the run.
 */
import {
  describeHostileRpcPortLimitsSuite,
  type RpcPortLimits,
  type RpcPortUnderTest,
} from "@sluice/shuffle-tck/transport";
import { expect } from "vitest";
import { FrameType } from "./remote-shuffle-messages.js";
import {
  encodeFrame,
  errorFrameOf,
  frameHeader,
  jsonFrame,
  openFrame,
  statFrame,
  strangerPartitionIds,
  strangerRegistration,
} from "./test-support/frames.js";
import {
  partitionDescriptor,
  RemoteShuffleHarness,
  readPartition,
  recordsOf,
  register,
  writePartition,
} from "./test-support/remote-shuffle-harness.js";

/** The suite's limits as this plugin's keys. */
function rpcSettings(limits: RpcPortLimits): Record<string, unknown> {
  return {
    "remote-shuffle.rpc.max-message-size": `${limits.maxMessageSize}b`,
    "remote-shuffle.rpc.max-connections": limits.maxConnections,
    "remote-shuffle.rpc.idle-connection-timeout": `${limits.idleTimeoutMs}ms`,
    "remote-shuffle.rpc.frame-read-timeout": `${limits.frameReadTimeoutMs}ms`,
    "remote-shuffle.rpc.max-outbound-bytes-per-connection": `${limits.maxOutboundBytes}b`,
  };
}

/** A partition pushed through a worker and read back whole. */
async function expectPushAndRead(harness: RemoteShuffleHarness): Promise<void> {
  const producerSide = await harness.startEnvironment();
  const consumerSide = await harness.startEnvironment();
  const partition = partitionDescriptor(2);
  const descriptor = await register(harness, partition);
  const records = [recordsOf(0, 500), recordsOf(1, 300)];
  await writePartition(producerSide, partition, descriptor, records);
  const read = await readPartition(consumerSide, partition, descriptor, 2);
  expect(read).toEqual(records.map((r) => Buffer.concat(r)));
}

const errorOf = (received: Buffer) => errorFrameOf(received);

describeHostileRpcPortLimitsSuite("remote shuffle manager", {
  async start(limits): Promise<RpcPortUnderTest> {
    const harness = await RemoteShuffleHarness.start(rpcSettings(limits));
    const register = (more: Record<string, unknown> = {}) =>
      jsonFrame(FrameType.REGISTER, strangerRegistration(more));
    return {
      port: harness.master.managerPort,
      stats: () => harness.master.getRpcStats(),
      announce: (length) => frameHeader(FrameType.REGISTER, length),
      malformed: [
        { name: "REGISTER null", bytes: jsonFrame(FrameType.REGISTER, "null") },
        { name: "REGISTER not JSON", bytes: jsonFrame(FrameType.REGISTER, "{host:") },
        { name: "REGISTER empty", bytes: encodeFrame(FrameType.REGISTER) },
        { name: "REGISTER {}", bytes: jsonFrame(FrameType.REGISTER, {}) },
        { name: "REGISTER []", bytes: jsonFrame(FrameType.REGISTER, []) },
        { name: "REGISTER with a numeric host", bytes: register({ host: 1 }) },
        { name: "REGISTER with a port as text", bytes: register({ rpcPort: "80" }) },
        { name: "REGISTER with port 70000", bytes: register({ dataPort: 70_000 }) },
        { name: "REGISTER with a short incarnation", bytes: register({ incarnation: "ab" }) },
        { name: "REGISTER without a secret", bytes: register({ secret: undefined }) },
        { name: "REGISTER with an extra field", bytes: register({ partitions: [] }) },
        { name: "HEARTBEAT first", bytes: jsonFrame(FrameType.HEARTBEAT, { partitions: 0 }) },
        { name: "STORED first", bytes: jsonFrame(FrameType.STORED, { partitionIds: [] }) },
        { name: "an unknown frame type first", bytes: jsonFrame(99, {}) },
        {
          name: "HEARTBEAT null after REGISTER",
          bytes: Buffer.concat([register(), jsonFrame(FrameType.HEARTBEAT, "null")]),
        },
        {
          name: "HEARTBEAT {} after REGISTER",
          bytes: Buffer.concat([register(), jsonFrame(FrameType.HEARTBEAT, {})]),
        },
        {
          name: "HEARTBEAT not JSON after REGISTER",
          bytes: Buffer.concat([register(), jsonFrame(FrameType.HEARTBEAT, "beat")]),
        },
        {
          name: "HEARTBEAT with counts as text after REGISTER",
          bytes: Buffer.concat([
            register(),
            jsonFrame(FrameType.HEARTBEAT, { partitions: "1", storage: {} }),
          ]),
        },
        {
          name: "STORED naming something that is no partition id",
          bytes: Buffer.concat([
            register(),
            jsonFrame(FrameType.STORED, { partitionIds: ["not-an-id"] }),
          ]),
        },
        {
          name: "STORED with more ids than a frame may hold",
          bytes: Buffer.concat([
            register(),
            jsonFrame(FrameType.STORED, { partitionIds: strangerPartitionIds(257) }),
          ]),
        },
        {
          name: "a second REGISTER on a registered connection",
          bytes: Buffer.concat([register(), register()]),
        },
      ],
      // A registered stranger that reports partitions the manager never assigned: each STORED
      // earns a RELEASE of all of them.
      flood: {
        prelude: register(),
        frame: jsonFrame(FrameType.STORED, { partitionIds: strangerPartitionIds(256) }),
      },
      errorOf,
      async expectStillServing() {
        await harness.startWorker();
        await expectPushAndRead(harness);
      },
      close: () => harness.close(),
    };
  },
});

describeHostileRpcPortLimitsSuite("remote shuffle worker", {
  async start(limits): Promise<RpcPortUnderTest> {
    const harness = await RemoteShuffleHarness.start(rpcSettings(limits));
    const worker = await harness.startWorker();
    // A partition the manager assigned: the frames below are real but for their fault.
    const partition = partitionDescriptor(1);
    const descriptor = await register(harness, partition);
    const other = await register(harness, partitionDescriptor(1));
    const shuffleDescriptor = (json: Record<string, unknown>) =>
      json.shuffleDescriptor as { plugin: { access?: Record<string, unknown> } };
    return {
      port: descriptor.plugin.worker.rpcPort,
      stats: () => worker.getRpcStats(),
      announce: (length) => frameHeader(FrameType.OPEN, length),
      malformed: [
        { name: "OPEN null", bytes: jsonFrame(FrameType.OPEN, "null") },
        { name: "OPEN not JSON", bytes: jsonFrame(FrameType.OPEN, "{descriptor") },
        { name: "OPEN empty", bytes: encodeFrame(FrameType.OPEN) },
        { name: "OPEN {}", bytes: jsonFrame(FrameType.OPEN, {}) },
        {
          name: "OPEN with a numeric descriptor",
          bytes: jsonFrame(FrameType.OPEN, { descriptor: 5 }),
        },
        {
          name: "OPEN with an empty descriptor",
          bytes: jsonFrame(FrameType.OPEN, { descriptor: {} }),
        },
        {
          name: "OPEN with a descriptor of wrong field types",
          bytes: openFrame(partition, descriptor, (json) => {
            json.maxParallelism = "128";
          }),
        },
        {
          name: "OPEN without an access token",
          bytes: openFrame(partition, descriptor, (json) => {
            delete shuffleDescriptor(json).plugin.access;
          }),
        },
        {
          name: "OPEN with a forged access token",
          bytes: openFrame(partition, descriptor, (json) => {
            (shuffleDescriptor(json).plugin.access as Record<string, unknown>).token = "0".repeat(
              64,
            );
          }),
        },
        {
          name: "OPEN with the token of another partition",
          bytes: openFrame(partition, descriptor, (json) => {
            (shuffleDescriptor(json).plugin.access as Record<string, unknown>).token =
              other.plugin.access.token;
          }),
        },
        {
          name: "OPEN naming another job",
          bytes: openFrame(partition, descriptor, (json) => {
            (shuffleDescriptor(json).plugin.access as Record<string, unknown>).jobId = "f".repeat(
              32,
            );
          }),
        },
        { name: "STAT null", bytes: jsonFrame(FrameType.STAT, "null") },
        { name: "STAT not JSON", bytes: jsonFrame(FrameType.STAT, "stat?") },
        { name: "STAT {}", bytes: jsonFrame(FrameType.STAT, {}) },
        {
          name: "STAT with an id as text",
          bytes: statFrame(descriptor, (json) => {
            json.id = "1";
          }),
        },
        {
          name: "STAT naming something that is no partition id",
          bytes: statFrame(descriptor, (json) => {
            json.partitionId = "p";
          }),
        },
        {
          name: "STAT with a forged access token",
          bytes: statFrame(descriptor, (json) => {
            json.token = "1".repeat(64);
          }),
        },
        { name: "DATA first", bytes: encodeFrame(FrameType.DATA, Buffer.alloc(8)) },
        { name: "FINISH first", bytes: jsonFrame(FrameType.FINISH, { checksums: [] }) },
        { name: "an unknown frame type first", bytes: jsonFrame(99, {}) },
        {
          name: "OPEN on a checksum connection",
          bytes: Buffer.concat([statFrame(descriptor), openFrame(partition, descriptor)]),
        },
      ],
      // Checksum queries for a partition that is assigned but not stored: each earns an answer.
      flood: { frame: statFrame(descriptor) },
      errorOf,
      expectStillServing: () => expectPushAndRead(harness),
      close: () => harness.close(),
    };
  },
});
