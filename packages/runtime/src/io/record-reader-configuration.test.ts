import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  ConfigurationError,
  ErrorCodes,
  NetworkBufferPool,
  RecordTooLargeError,
  SPILL_FILE_SUFFIX,
  StringSerializer,
} from "@sluice/core";
import { readableConfigOf } from "@sluice/runtime-api";
import { afterEach, describe, expect, it } from "vitest";
import { PollStatus, RecordReader } from "./record-reader.js";
import {
  readRecordReaderConfiguration,
  readTmpDirectories,
} from "./record-reader-configuration.js";
import { encodeString, wireLocalPartition } from "./test-support/local-wiring.js";

const KB = 1024;

describe("readRecordReaderConfiguration", () => {
  const dirs: string[] = [];
  let pool: NetworkBufferPool | undefined;

  afterEach(() => {
    pool?.destroy();
    pool = undefined;
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("reads the spilling threshold, the maximum record size and io.tmp.dirs", () => {
    const options = readRecordReaderConfiguration(
      readableConfigOf({
        "taskmanager.network.spilling-threshold": "200kb",
        "taskmanager.network.max-record-size": "1mb",
        "io.tmp.dirs": " /data/a, /data/b ,",
      }),
    );
    expect(options).toEqual({
      spillingThreshold: 200 * KB,
      maxRecordSize: 1024 * KB,
      tmpDirectories: ["/data/a", "/data/b"],
    });
    // The worker's own list wins; without any, the system's temporary folder.
    expect(
      readRecordReaderConfiguration(readableConfigOf({ "io.tmp.dirs": "/x" }), ["/w"])
        .tmpDirectories,
    ).toEqual(["/w"]);
    expect(readTmpDirectories(readableConfigOf({}))).toEqual([tmpdir()]);
  });

  it("refuses a spilling threshold below the deserializer's minimum, naming the key", () => {
    let caught: unknown;
    try {
      readRecordReaderConfiguration(
        readableConfigOf({ "taskmanager.network.spilling-threshold": "1kb" }),
      );
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ConfigurationError);
    expect((caught as ConfigurationError).code).toBe(ErrorCodes.CONFIG);
    expect((caught as Error).message).toContain("taskmanager.network.spilling-threshold");
  });

  /** One producer subpartition read through a gate in this process, with 4 kb buffers. */
  function wireOneChannel() {
    pool = new NetworkBufferPool(64, 4 * KB);
    return wireLocalPartition(pool, { channels: 1, partitionBuffers: [2, 8], gateBuffers: [1, 2] });
  }

  function spillConfig(dir: string) {
    return readRecordReaderConfiguration(
      readableConfigOf({
        "taskmanager.network.spilling-threshold": "100kb",
        "taskmanager.network.max-record-size": "200kb",
        "io.tmp.dirs": dir,
      }),
    );
  }

  it("makes a RecordReader spill a record above the threshold into io.tmp.dirs", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-spill-"));
    dirs.push(dir);
    const { partition, gate } = wireOneChannel();
    const reader = new RecordReader(gate, new StringSerializer(), spillConfig(dir));
    const large = "s".repeat(150 * KB);
    const producing = (async () => {
      partition.emitRecord(encodeString(large), 0); // far more than the pool: completes as read
      while (!partition.isAvailable()) await partition.getAvailableFuture();
      partition.finish();
    })();
    const records: string[] = [];
    let sawSpillFile = false;
    for (;;) {
      const status = reader.pollRecords((r) => records.push(r));
      sawSpillFile ||= readdirSync(dir).some((f) => f.endsWith(SPILL_FILE_SUFFIX));
      if (status === PollStatus.END_OF_INPUT) break;
      if (status === PollStatus.NOTHING_AVAILABLE) await reader.getAvailableFuture();
    }
    await producing;
    expect(sawSpillFile).toBe(true);
    expect(records).toEqual([large]);
    expect(readdirSync(dir)).toEqual([]); // deleted once the record was read
    reader.close();
    await gate.close();
    partition.close();
  });

  it("makes a RecordReader refuse a record above taskmanager.network.max-record-size", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), "sluice-spill-"));
    dirs.push(dir);
    const { partition, gate } = wireOneChannel();
    const reader = new RecordReader(gate, new StringSerializer(), spillConfig(dir));
    partition.emitRecord(encodeString("t".repeat(250 * KB)), 0);
    let caught: unknown;
    for (let i = 0; i < 100 && caught === undefined; i++) {
      try {
        if (reader.pollRecords(() => {}) === PollStatus.NOTHING_AVAILABLE) {
          await reader.getAvailableFuture();
        }
      } catch (error) {
        caught = error;
      }
    }
    expect(caught).toBeInstanceOf(RecordTooLargeError);
    expect((caught as Error).message).toContain("taskmanager.network.max-record-size");
    reader.close();
    await gate.close();
    partition.release();
    partition.close();
  });
});
