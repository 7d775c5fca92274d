import { randomBytes } from "node:crypto";
import { ResultPartitionID } from "@sluice/core";
import {
  createResultPartitionDeploymentDescriptor,
  type PartitionDescriptor,
  ResultPartitionDeploymentDescriptorCodec,
} from "@sluice/runtime-api";
import type { RemoteShuffleDescriptor } from "../remote-shuffle-descriptor.js";
import { FrameType } from "../remote-shuffle-messages.js";

/** One encoded frame, as FrameConnection writes it: u32 length, u8 type, payload. */
export function encodeFrame(type: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  const header = Buffer.allocUnsafe(5);
  header.writeUInt32BE(payload.byteLength + 1, 0);
  header.writeUInt8(type, 4);
  return Buffer.concat([header, payload]);
}

/** A frame whose payload is `json` as written (any text, valid JSON or not). */
export function jsonFrame(type: number, json: unknown): Buffer {
  const text = typeof json === "string" ? json : JSON.stringify(json);
  return encodeFrame(type, Buffer.from(text, "utf8"));
}

/** The header of a frame of `type` announcing `length` payload bytes. */
export function frameHeader(type: number, length: number): Buffer {
  const header = Buffer.allocUnsafe(5);
  header.writeUInt32BE(length + 1, 0);
  header.writeUInt8(type, 4);
  return header;
}

/** Every whole frame in `bytes` (what a peer received). */
export function decodeFrames(bytes: Buffer): { type: number; payload: Buffer }[] {
  const frames: { type: number; payload: Buffer }[] = [];
  let at = 0;
  while (bytes.byteLength - at >= 5) {
    const length = bytes.readUInt32BE(at);
    if (bytes.byteLength - at - 4 < length) break;
    frames.push({
      type: bytes[at + 4] as number,
      payload: bytes.subarray(at + 5, at + 4 + length),
    });
    at += 4 + length;
  }
  return frames;
}

/** The ERROR frame among what a peer received, decoded. */
export function errorFrameOf(
  bytes: Buffer,
): { code: string; name: string; message: string } | undefined {
  const error = decodeFrames(bytes).find((frame) => frame.type === FrameType.ERROR);
  return error === undefined ? undefined : JSON.parse(error.payload.toString("utf8"));
}

/** A registration of a worker nobody runs, at a fresh port of 127.0.0.1. */
export function strangerRegistration(more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    host: "127.0.0.1",
    rpcPort: 40_000 + Math.floor(Math.random() * 20_000),
    dataPort: 40_000 + Math.floor(Math.random() * 20_000),
    incarnation: randomBytes(16).toString("hex"),
    secret: randomBytes(32).toString("hex"),
    pid: 1,
    ...more,
  };
}

/** `count` partition ids nobody assigned. */
export function strangerPartitionIds(count: number): string[] {
  return Array.from({ length: count }, () => new ResultPartitionID().toString());
}

/** The OPEN frame a producer sends for `descriptor`, its fields changed by `edit`. */
export function openFrame(
  partition: PartitionDescriptor,
  descriptor: RemoteShuffleDescriptor,
  edit: (json: Record<string, unknown>) => void = () => {},
): Buffer {
  const json = ResultPartitionDeploymentDescriptorCodec.toJSON(
    createResultPartitionDeploymentDescriptor(partition, descriptor, 128),
  ) as unknown as Record<string, unknown>;
  const copy = JSON.parse(JSON.stringify(json)) as Record<string, unknown>;
  edit(copy);
  return jsonFrame(FrameType.OPEN, { descriptor: copy });
}

/** The STAT frame a consumer sends for subpartition 0 of `descriptor`, changed by `edit`. */
export function statFrame(
  descriptor: RemoteShuffleDescriptor,
  edit: (json: Record<string, unknown>) => void = () => {},
): Buffer {
  const json: Record<string, unknown> = {
    id: 1,
    partitionId: descriptor.resultPartitionId.toString(),
    subpartition: 0,
    incarnation: descriptor.plugin.worker.incarnation,
    jobId: descriptor.plugin.access.jobId,
    token: descriptor.plugin.access.token,
  };
  edit(json);
  return jsonFrame(FrameType.STAT, json);
}
