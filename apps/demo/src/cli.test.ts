import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Configuration } from "@sluice/runtime";
import { ExecutionCheckpointingOptions } from "@sluice/runtime-api";
import { describe, expect, it } from "vitest";
import { applyCheckpointingFlags, recoverySettingsOf } from "./checkpointing-options.js";
import { DEFAULTS, parseCli, UsageError } from "./cli.js";
import { runDemo } from "./main.js";
import { capture } from "./test-support/captured-output.js";
import { parseCount } from "./word-count-options.js";

function usageError(argv: string[]): string {
  try {
    parseCli(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).exitCode).toBe(2);
    return (error as Error).message;
  }
  throw new Error(`parseCli(${JSON.stringify(argv)}) did not fail`);
}

describe("command line", () => {
  it("has defaults for everything", () => {
    expect(parseCli([])).toEqual({
      cluster: "local",
      jobManager: undefined,
      shuffle: undefined,
      configFile: undefined,
      dynamicProperties: [],
      mode: "streaming",
      records: DEFAULTS.records,
      parallelism: 2,
      taskManagers: 2,
      seed: DEFAULTS.seed,
      durationSeconds: undefined,
      throttle: undefined,
      output: undefined,
      sink: undefined,
      shuffleWorkers: undefined,
      checkpointInterval: undefined,
      checkpointing: undefined,
      killTaskManagerAfterMs: undefined,
      killTaskManagerBetweenStages: false,
      killShuffleWorkerAfterMs: undefined,
      highAvailability: undefined,
      jobManagers: undefined,
      killJobManagerAfterMs: [],
      json: false,
      help: false,
    });
  });

  it("reads --ha, --job-managers and --kill-job-manager-after, and refuses them where they cannot work", () => {
    const options = parseCli([
      "--ha",
      "etcd",
      "--job-managers",
      "3",
      "--kill-job-manager-after",
      "1500,3000,4.5k",
    ]);
    expect(options.cluster).toBe("standby");
    expect(options.highAvailability).toBe("etcd");
    expect(options.jobManagers).toBe(3);
    expect(options.killJobManagerAfterMs).toEqual([1500, 3000, 4500]);
    expect(parseCli(["--ha", "etcd"]).cluster).toBe("local");
    expect(usageError(["--kill-job-manager-after", "1000"])).toContain("give --job-managers too");
    expect(usageError(["--job-managers", "2", "--kill-job-manager-after", "3000,2000"])).toContain(
      'expects ascending times, got "3000,2000"',
    );
    expect(usageError(["--job-managers", "9"])).toContain("--job-managers must be between 1 and 8");
    expect(usageError(["--job-managers", "2", "--kill-task-manager-after", "100"])).toContain(
      "does not combine with --job-managers",
    );
    expect(usageError(["--ha", " "])).toContain("--ha expects none, etcd");
  });

  it("exits with code 2 when --job-managers runs without high availability", async () => {
    const err = capture();
    const code = await runDemo(["--job-managers", "2"], {
      stdout: capture().stream,
      stderr: err.stream,
    });
    expect(code).toBe(2);
    expect(err.text()).toContain(
      "--job-managers runs standby job managers, which need high availability",
    );
  });

  it("reads every option, and -D in both of Flink's forms", () => {
    const options = parseCli([
      "--shuffle",
      "ws",
      "--config",
      "conf.yaml",
      "-D",
      "a.b=1",
      "-Dc.d=x=y",
      "--records",
      "200k",
      "--parallelism",
      "3",
      "--task-managers=4",
      "--seed",
      "7",
      "--duration",
      "30",
      "--throttle",
      "20k",
      "--json",
      "--mode",
      "batch",
    ]);
    expect(options).toMatchObject({
      mode: "batch",
      shuffle: "ws",
      configFile: "conf.yaml",
      dynamicProperties: ["-Da.b=1", "-Dc.d=x=y"],
      records: 200_000,
      parallelism: 3,
      taskManagers: 4,
      seed: 7,
      durationSeconds: 30,
      throttle: 20_000,
      json: true,
    });
  });

  it("accepts counts with separators and k/m suffixes", () => {
    expect(parseCount("--records", "2_000_000", 1, 1e9)).toBe(2_000_000);
    expect(parseCount("--records", "2m", 1, 1e9)).toBe(2_000_000);
    expect(parseCount("--records", "1.5k", 1, 1e9)).toBe(1_500);
  });

  it("rejects bad values with a message that names the option and the value", () => {
    expect(usageError(["--records", "x"])).toBe(
      '--records expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "x"',
    );
    expect(usageError(["--records", "0"])).toMatch(/^--records must be between 1 and/);
    expect(usageError(["--parallelism", "257"])).toBe(
      "--parallelism must be between 1 and 256, got 257",
    );
    expect(usageError(["--task-managers", "-1"])).toBe(
      '--task-managers expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "-1"',
    );
    expect(usageError(["--records", "-5"])).toBe(
      '--records expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "-5"',
    );
    expect(usageError(["--shuffle", ""])).toMatch(/^--shuffle expects tcp, ws/);
    expect(usageError(["--duration", "0"])).toBe("--duration must be between 1 and 86,400, got 0");
    expect(usageError(["--throttle", "fast"])).toMatch(/^--throttle expects a whole number/);
    expect(usageError(["--mode", "bulk"])).toBe('--mode expects streaming or batch, got "bulk"');
  });

  it("refuses checkpoint flags in batch mode and a kill between stages in streaming mode, naming the flag", () => {
    expect(usageError(["--mode", "batch", "--checkpoint-interval", "200"])).toBe(
      "--checkpoint-interval applies to --mode streaming only: a batch job takes no checkpoints (see --help)",
    );
    expect(usageError(["--kill-task-manager-between-stages"])).toMatch(
      /^--kill-task-manager-between-stages applies to --mode batch only/,
    );
    expect(
      usageError([
        "--mode",
        "batch",
        "--kill-task-manager-between-stages",
        "--kill-task-manager-after",
        "100",
      ]),
    ).toMatch(/^--kill-task-manager-after and --kill-task-manager-between-stages each kill/);
  });

  it("reads the kill flags of batch mode", () => {
    expect(parseCli(["--mode", "batch", "--kill-task-manager-after", "300"])).toMatchObject({
      mode: "batch",
      killTaskManagerAfterMs: 300,
      killTaskManagerBetweenStages: false,
    });
    expect(parseCli(["--mode", "batch", "--kill-task-manager-between-stages"])).toMatchObject({
      mode: "batch",
      killTaskManagerAfterMs: undefined,
      killTaskManagerBetweenStages: true,
    });
  });

  it("rejects unknown options, missing values and stray arguments", () => {
    expect(usageError(["--recrds", "5"])).toBe("unknown option --recrds (see --help)");
    expect(usageError(["--records"])).toBe("--records expects a value (see --help)");
    expect(usageError(["--json=yes"])).toBe("--json takes no value (see --help)");
    expect(usageError(["records"])).toMatch(/^unexpected argument "records"/);
  });

  it("reads the checkpoint and recovery flags", () => {
    expect(
      parseCli([
        "--checkpoint-interval",
        "200",
        "--checkpointing",
        "At-Least-Once",
        "--kill-task-manager-after",
        "1.5k",
      ]),
    ).toMatchObject({
      checkpointInterval: 200,
      checkpointing: "at-least-once",
      killTaskManagerAfterMs: 1_500,
    });
    expect(parseCli(["--checkpointing", "exactly-once"])).toMatchObject({
      checkpointing: "exactly-once",
      checkpointInterval: undefined,
    });
  });

  it("rejects bad checkpoint flags", () => {
    expect(usageError(["--checkpointing", "twice"])).toBe(
      '--checkpointing expects exactly-once or at-least-once, got "twice"',
    );
    expect(usageError(["--checkpoint-interval", "5"])).toBe(
      "--checkpoint-interval must be between 10 and 86,400,000, got 5",
    );
    expect(usageError(["--kill-task-manager-after", "soon"])).toMatch(
      /^--kill-task-manager-after expects a whole number/,
    );
  });

  it("sets the checkpoint keys on the configuration, over -D", () => {
    const configuration = new Configuration({ "execution.checkpointing.mode": "EXACTLY_ONCE" });
    applyCheckpointingFlags(configuration, {
      checkpointInterval: 250,
      checkpointing: "at-least-once",
    });
    expect(configuration.get(ExecutionCheckpointingOptions.CHECKPOINTING_INTERVAL)).toBe(250);
    expect(recoverySettingsOf(configuration)).toEqual({ mode: "AT_LEAST_ONCE", restarts: true });
    expect(recoverySettingsOf(new Configuration())).toEqual({ mode: undefined, restarts: false });
  });

  it("rejects a malformed -D with the runtime's message", () => {
    expect(usageError(["-D"])).toMatch(/"-D" is the last argument/);
    expect(usageError(["-D", "novalue"])).toMatch(/expected -D key=value/);
  });

  it("reads --jobmanager, a session cluster's REST endpoint, and refuses what configures a cluster the demo starts", () => {
    expect(parseCli(["--jobmanager", "10.0.0.1:8081", "--records", "5k"])).toMatchObject({
      cluster: "session",
      jobManager: { host: "10.0.0.1", port: 8081 },
      records: 5_000,
    });
    expect(parseCli(["--jobmanager", "[::1]:8081"])).toMatchObject({
      jobManager: { host: "::1", port: 8081 },
    });
    expect(usageError(["--jobmanager", "nohost"])).toBe(
      '--jobmanager expects <host>:<port> (e.g. 10.0.0.1:8081 or [::1]:8081), got "nohost"',
    );
    for (const flags of [
      ["--shuffle", "ws"],
      ["--task-managers", "3"],
      ["--checkpoint-interval", "200"],
      ["--kill-task-manager-after", "100"],
      ["--job-managers", "2"],
    ]) {
      expect(usageError(["--jobmanager", "h:1", ...flags])).toBe(
        `${flags[0]} configures or acts on the cluster the demo starts; with --jobmanager the session cluster has its own (give it to sluice jobmanager)`,
      );
    }
    expect(usageError(["--jobmanager", "h:1", "-D", "a.b=c"])).toMatch(/^-D configures/);
    // The session cluster's checkpoints commit the sink's files.
    expect(parseCli(["--jobmanager", "h:1", "--sink", "files", "--output", "out"])).toMatchObject({
      sink: "files",
      output: path.resolve("out"),
    });
  });

  it("runs the sluice commands of a cluster under its own name, a task manager with the job module's folder", async () => {
    const out = capture();
    expect(
      await runDemo(["taskmanager", "--help"], { stdout: out.stream, stderr: capture().stream }),
    ).toBe(0);
    expect(out.text()).toMatch(/^Usage: sluice taskmanager/);
    const err = capture();
    expect(
      await runDemo(["jobmanager", "--records", "5"], {
        stdout: capture().stream,
        stderr: err.stream,
      }),
    ).toBe(2);
    expect(err.text()).toContain("unknown option '--records'");
  });

  it("exits with code 2 and prints the problem on stderr", async () => {
    const out = capture();
    const err = capture();
    const code = await runDemo(["--records", "x"], { stdout: out.stream, stderr: err.stream });
    expect(code).toBe(2);
    expect(err.text()).toContain(
      'error: --records expects a whole number (e.g. 200000, 200_000, 200k or 2m), got "x"',
    );
    expect(out.text()).toBe("");
  });

  it("exits with code 2 for an invalid configuration value, naming the key", async () => {
    const err = capture();
    const code = await runDemo(["-D", "taskmanager.memory.segment-size=lots"], {
      stdout: capture().stream,
      stderr: err.stream,
    });
    expect(code).toBe(2);
    expect(err.text()).toContain('"taskmanager.memory.segment-size"');
    expect(err.text()).toContain('"lots"');
  });

  it("exits with code 2 for a shuffle plugin that cannot be found or breaks the SPI, naming it", async () => {
    const folder = mkdtempSync(path.join(tmpdir(), "sluice-demo-plugin-"));
    try {
      const plugin = path.join(folder, "plugin.mjs");
      writeFileSync(
        plugin,
        "export class AsyncMaster { async createShuffleMaster() { return {}; } createShuffleEnvironment() { return {}; } }\n",
      );
      for (const [shuffle, code] of [
        [`${path.join(folder, "missing.mjs")}#Factory`, "SLUICE_ERR_PLUGIN_NOT_FOUND"],
        [`${plugin}#Absent`, "SLUICE_ERR_PLUGIN_EXPORT_MISSING"],
        [`${plugin}#AsyncMaster`, "SLUICE_ERR_PLUGIN_CONTRACT"],
      ] as const) {
        const err = capture();
        const exit = await runDemo(["--shuffle", shuffle, "--records", "100"], {
          stdout: capture().stream,
          stderr: err.stream,
        });
        expect(exit, err.text()).toBe(2);
        expect(err.text()).toContain(`[${code}]`);
        expect(err.text()).toContain(shuffle);
        // One error, not a second one from the clean-up.
        expect(err.text().match(/error:/g)).toHaveLength(1);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it("prints the help text with --help and exits 0", async () => {
    const out = capture();
    expect(await runDemo(["--help"], { stdout: out.stream, stderr: capture().stream })).toBe(0);
    expect(out.text()).toMatch(/^Usage: pnpm demo/);
    expect(out.text()).toContain("--shuffle <plugin>");
    expect(out.text()).toContain("--checkpoint-interval <ms>");
    expect(out.text()).toContain("--checkpointing <mode>");
    expect(out.text()).toContain("--kill-task-manager-after <ms>");
    expect(out.text()).toContain("--shuffle-workers <n>");
    expect(out.text()).toContain("--kill-shuffle-worker-after <ms>");
    expect(out.text()).toContain("--jobmanager <host:port>");
    expect(out.text()).toContain("pnpm sluice taskmanager --usrlib apps/demo/dist");
    expect(out.text()).toContain("--mode <mode>");
    expect(out.text()).toContain("pnpm demo -- --mode batch");
  });

  it("parses the remote shuffle's flags", () => {
    expect(
      parseCli(["--mode", "batch", "--shuffle", "remote", "--shuffle-workers", "3"]),
    ).toMatchObject({ shuffle: "remote", shuffleWorkers: 3, killShuffleWorkerAfterMs: undefined });
    expect(
      parseCli(["--mode", "batch", "--shuffle", "remote", "--kill-shuffle-worker-after", "2k"]),
    ).toMatchObject({ killShuffleWorkerAfterMs: 2000 });
    expect(usageError(["--kill-shuffle-worker-after", "100"])).toMatch(
      /^--kill-shuffle-worker-after applies to --mode batch only/,
    );
    expect(usageError(["--shuffle-workers", "17"])).toMatch(
      /^--shuffle-workers must be between 0 and 16/,
    );
  });
});
