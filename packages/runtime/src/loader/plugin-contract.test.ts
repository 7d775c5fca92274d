import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ErrorCodes } from "@sluice/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Configuration } from "../config/configuration.js";
import { JobDeployer } from "../jobmaster/job-deployer.js";
import { TaskExecutor } from "../taskexecutor/task-executor.js";

/**
 * Plugins that each break the SPI in one way. Each environment method that should exist does
 * nothing, so only the broken member decides the outcome.
 */
const PLUGINS = `
const BRAND = Symbol.for("@sluice/shuffle-service-factory");
const environment = (overrides = {}) => ({
  start: async () => 4242,
  createShuffleIOOwnerContext: () => ({}),
  createResultPartitionWriters: () => [],
  createInputGates: () => [],
  updatePartitionInfo: () => false,
  releasePartitionsLocally: () => {},
  getPartitionsOccupyingLocalResources: () => [],
  close: async () => {},
  ...overrides,
});
class Base {
  [BRAND] = true;
  createShuffleMaster() { return { start: async () => {} }; }
  createShuffleEnvironment() { return environment(); }
}
export class AsyncEnvironment extends Base {
  async createShuffleEnvironment() { return environment(); }
}
export class AsyncMaster extends Base {
  async createShuffleMaster() { return {}; }
}
export class HalfEnvironment extends Base {
  createShuffleEnvironment() { return { start: async () => 1 }; }
}
export class PortlessEnvironment extends Base {
  createShuffleEnvironment() { return environment({ start: async () => "8080" }); }
}
export class SyncStartEnvironment extends Base {
  createShuffleEnvironment() { return environment({ start: () => 8080 }); }
}
`;

let dir: string;
let file: string;

beforeAll(() => {
  dir = realpathSync(mkdtempSync(path.join(tmpdir(), "sluice-contract-")));
  file = path.join(dir, "plugins.mjs");
  writeFileSync(file, PLUGINS);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(exportName: string): Configuration {
  return new Configuration({ "shuffle-service-factory.class": `${file}#${exportName}` });
}

describe("a plugin that breaks the SPI", () => {
  it("is named with the member when createShuffleEnvironment returns a Promise", async () => {
    await expect(TaskExecutor.start(config("AsyncEnvironment"))).rejects.toMatchObject({
      name: "PluginContractError",
      code: ErrorCodes.PLUGIN_CONTRACT,
      message: expect.stringMatching(
        /plugins\.mjs#AsyncEnvironment.*createShuffleEnvironment returned a Promise/,
      ),
    });
  });

  it("is named with the member when createShuffleMaster returns a Promise, with no second error", async () => {
    const error = await JobDeployer.start(config("AsyncMaster")).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toMatchObject({
      code: ErrorCodes.PLUGIN_CONTRACT,
      message: expect.stringMatching(/#AsyncMaster.*createShuffleMaster returned a Promise/),
    });
    expect((error as Error).cause).toBeUndefined();
  });

  it("lists the methods an environment lacks", async () => {
    await expect(TaskExecutor.start(config("HalfEnvironment"))).rejects.toMatchObject({
      code: ErrorCodes.PLUGIN_CONTRACT,
      message: expect.stringContaining(
        "lacks the methods createShuffleIOOwnerContext, createResultPartitionWriters",
      ),
    });
  });

  it("is refused when start() resolves to something that is not a port", async () => {
    await expect(TaskExecutor.start(config("PortlessEnvironment"))).rejects.toMatchObject({
      code: ErrorCodes.PLUGIN_CONTRACT,
      message: expect.stringMatching(/start\(\) must resolve to a port.*got "8080"$/),
    });
  });

  it("is refused when start() does not return a Promise", async () => {
    await expect(TaskExecutor.start(config("SyncStartEnvironment"))).rejects.toMatchObject({
      code: ErrorCodes.PLUGIN_CONTRACT,
      message: expect.stringContaining("start() must return a Promise of the data port"),
    });
  });
});
