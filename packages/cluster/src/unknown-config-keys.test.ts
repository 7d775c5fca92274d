import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { CONFIG_WARNING_TYPE, Configuration, TaskExecutor } from "@sluice/runtime";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { JobManager } from "./job-manager.js";
import { TaskManager } from "./task-manager.js";
import { LOADER } from "./test-support/test-cluster.js";

let dir: string;
let warnings: MockInstance<typeof process.emitWarning>;
const closing: (() => Promise<unknown>)[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "sluice-unknown-keys-"));
  warnings = vi.spyOn(process, "emitWarning").mockImplementation(() => undefined);
});

afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
  warnings.mockRestore();
  rmSync(dir, { recursive: true, force: true });
});

/** A config file as the embedding guide's processes read it. */
function configFile(name: string, lines: readonly string[]): string {
  const file = path.join(dir, name);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

/** The messages of every unknown-key warning emitted so far. */
function unknownKeyWarnings(): string[] {
  return warnings.mock.calls
    .filter(([, options]) => {
      const { type, code } = (options ?? {}) as { type?: string; code?: string };
      return type === CONFIG_WARNING_TYPE && code === "SLUICE_CONFIG_UNKNOWN_KEYS";
    })
    .map(([message]) => String(message));
}

/** The WebSocket plugin's own keys (`WsShuffleServiceFactory.configOptions`), set in a file. */
const WS_PLUGIN_KEYS = [
  "taskmanager.network.websocket.high-water-mark: 1mb",
  "taskmanager.network.websocket.handshake-timeout: 5s",
];

describe("the keys of a configuration loaded with Configuration.load", () => {
  it("are reported once the plugins are loaded, in one warning for a job manager and a TaskExecutor of the same configuration: only the typo, with its fix, not the plugin's own keys", async () => {
    const configuration = Configuration.load({
      configFile: configFile("sluice.yaml", [
        "shuffle-service-factory.class: ws",
        "jobmanager.rpc.address: 127.0.0.1",
        "jobmanager.rpc.port: 0",
        "taskmanager.memory.network.min: 4mb",
        ...WS_PLUGIN_KEYS,
        "taskmanager.network.websocket.low-watr-mark: 256kb",
      ]),
      args: ["-D", "taskmanager.network.websocket.per-message-deflate=false"],
    });
    const jobManager = await JobManager.start(configuration, { loader: LOADER });
    closing.push(() => jobManager.close({ timeoutMs: 1_000 }));
    const executor = await TaskExecutor.start(configuration, { loader: LOADER });
    closing.push(() => executor.close());

    const reported = unknownKeyWarnings();
    expect(reported).toHaveLength(1);
    const [warning] = reported as [string];
    expect(warning).toContain('"taskmanager.network.websocket.low-watr-mark"');
    expect(warning).toContain('did you mean "taskmanager.network.websocket.low-water-mark"?');
    for (const key of [
      "high-water-mark",
      "handshake-timeout",
      "per-message-deflate",
      "shuffle-service-factory",
    ]) {
      expect(warning).not.toContain(key);
    }
  });

  it("are reported by a task manager for its own file once its TaskExecutor loaded the plugin, without the keys the job manager sent it", async () => {
    const jobManager = await JobManager.start(
      new Configuration({
        "shuffle-service-factory.class": "ws",
        "jobmanager.rpc.address": "127.0.0.1",
        "jobmanager.rpc.port": 0,
        "taskmanager.memory.network.min": "4mb",
        "my.application.setting": 1,
      }),
      { loader: LOADER },
    );
    closing.push(() => jobManager.close({ timeoutMs: 1_000 }));
    const own = Configuration.load({
      configFile: configFile("task-manager.yaml", [
        ...WS_PLUGIN_KEYS,
        "taskmanager.network.websocket.handshake-timout: 5s",
      ]),
    });
    const taskManager = await TaskManager.start(own, {
      jobManager: { host: jobManager.host, port: jobManager.port },
      loader: LOADER,
      connectRetryMs: 0,
    });
    closing.push(() => taskManager.close("the test ended"));

    const reported = unknownKeyWarnings();
    expect(reported).toHaveLength(1);
    const [warning] = reported as [string];
    expect(warning).toContain('"taskmanager.network.websocket.handshake-timout"');
    expect(warning).toContain('did you mean "taskmanager.network.websocket.handshake-timeout"?');
    expect(warning).not.toContain("high-water-mark");
    expect(warning).not.toContain("my.application.setting");
  });
});
