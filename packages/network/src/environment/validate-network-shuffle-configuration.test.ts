import { ConfigurationError, ErrorCodes } from "@sluice/core";
import { expectError } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { environmentContext, type RawConfig } from "../test-support/shuffle-fixture.js";
import { LocalShuffleServiceFactory } from "./network-shuffle-service-factory.js";
import { segmentsForOneChannel } from "./validate-network-shuffle-configuration.js";

/** Creating the environment is the worker's start-up: it must refuse what cannot work. */
function refusedAtStart(config: RawConfig): string {
  return expectError(
    () => new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config)),
    ConfigurationError,
    ErrorCodes.CONFIG,
  ).message;
}

async function starts(config: RawConfig): Promise<void> {
  const env = new LocalShuffleServiceFactory().createShuffleEnvironment(environmentContext(config));
  await env.start();
  await env.close();
}

describe("validateNetworkShuffleConfiguration", () => {
  it("refuses to start with taskmanager.memory.network.min=1kb, naming the key and what one channel needs", () => {
    const message = refusedAtStart({ "taskmanager.memory.network.min": "1kb" });
    expect(message).toContain("'taskmanager.memory.network.min' (1 kb)");
    expect(message).toContain("'taskmanager.memory.segment-size' (32 kb)");
    expect(message).toContain(`one channel needs ${segmentsForOneChannel(2)}`);
  });

  it("refuses to start with taskmanager.network.max-frame-size=1kb, naming it and the segment size", () => {
    const message = refusedAtStart({ "taskmanager.network.max-frame-size": "1kb" });
    expect(message).toContain("'taskmanager.network.max-frame-size' (1 kb)");
    expect(message).toContain("'taskmanager.memory.segment-size' (32 kb)");
  });

  it("refuses to start with a segment size that is not a power of two, naming the key and the value", () => {
    const message = refusedAtStart({ "taskmanager.memory.segment-size": "24kb" });
    expect(message).toContain('"taskmanager.memory.segment-size": "24kb"');
    expect(message).toContain("expected a power of two");
  });

  it("lists every problem at once", () => {
    const message = refusedAtStart({
      "taskmanager.memory.network.min": "1kb",
      "taskmanager.network.max-frame-size": "1kb",
    });
    expect(message).toContain("taskmanager.memory.network.min");
    expect(message).toContain("taskmanager.network.max-frame-size");
  });

  it("refuses buffers-per-channel=0 with floating-buffers-per-gate=0, naming both keys", () => {
    const message = refusedAtStart({
      "taskmanager.network.memory.buffers-per-channel": 0,
      "taskmanager.network.memory.floating-buffers-per-gate": 0,
    });
    expect(message).toContain("'taskmanager.network.memory.buffers-per-channel' = 0");
    expect(message).toContain("'taskmanager.network.memory.floating-buffers-per-gate' = 0");
  });

  it("refuses floating-buffers-per-gate=0, which leaves a gate without its required floating buffer", () => {
    const message = refusedAtStart({ "taskmanager.network.memory.floating-buffers-per-gate": 0 });
    expect(message).toContain("'taskmanager.network.memory.floating-buffers-per-gate' = 0");
  });

  it("refuses max-buffers-per-channel=1, which would stop every writer after its first buffer", () => {
    const message = refusedAtStart({ "taskmanager.network.memory.max-buffers-per-channel": 1 });
    expect(message).toContain("taskmanager.network.memory.max-buffers-per-channel");
    expect(message).toContain("at least 2");
  });

  it("refuses a minimum segment size above the segment size", () => {
    const message = refusedAtStart({
      "taskmanager.memory.segment-size": "4kb",
      "taskmanager.memory.min-segment-size": "8kb",
    });
    expect(message).toContain("'taskmanager.memory.min-segment-size' (8 kb)");
  });

  it("starts with exactly the memory one channel needs and with the smallest valid buffer counts", async () => {
    await starts({
      "taskmanager.memory.segment-size": "4kb",
      "taskmanager.memory.network.min": `${segmentsForOneChannel(2) * 4}kb`,
    });
    await starts({
      "taskmanager.network.memory.buffers-per-channel": 0,
      "taskmanager.network.memory.floating-buffers-per-gate": 1,
      "taskmanager.network.memory.max-buffers-per-channel": 2,
      "taskmanager.network.memory.max-overdraft-buffers-per-gate": 0,
      "taskmanager.network.memory.read-buffer.required-per-gate.max": 1,
    });
  });
});
