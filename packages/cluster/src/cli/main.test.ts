import { freePort } from "@sluice/core/testing";
import { describe, expect, it } from "vitest";
import { sluiceInProcess as sluice } from "../test-support/sluice-in-process.js";

describe("the sluice command line", () => {
  it("prints its commands with --help and exits 0", async () => {
    const { code, stdout } = await sluice("--help");
    expect(code).toBe(0);
    for (const command of ["jobmanager", "taskmanager", "shuffleworker", "run", "list", "cancel"]) {
      expect(stdout).toContain(command);
    }
  });

  it.each(["jobmanager", "taskmanager", "shuffleworker", "run", "list", "cancel"])(
    "prints the options of %s with --help and exits 0",
    async (command) => {
      const { code, stdout } = await sluice(command, "--help");
      expect(code).toBe(0);
      expect(stdout).toContain(`Usage: sluice ${command}`);
      expect(stdout).toContain("--config");
    },
  );

  it("exits 2 naming an unknown command", async () => {
    const { code, stderr } = await sluice("jobmanger");
    expect(code).toBe(2);
    expect(stderr).toContain("unknown command 'jobmanger'");
  });

  it("exits 2 for a malformed -D, naming it, before starting anything", async () => {
    const { code, stderr } = await sluice("taskmanager", "-D", "taskmanager.memory.network.min");
    expect(code).toBe(2);
    expect(stderr).toContain("SLUICE_ERR_CONFIG");
    expect(stderr).toContain("taskmanager.memory.network.min");
  });

  it("exits 2 for a --jobmanager that is no host:port", async () => {
    const { code, stderr } = await sluice("taskmanager", "--jobmanager", "localhost");
    expect(code).toBe(2);
    expect(stderr).toContain(
      '--jobmanager expects host:port (e.g. 10.0.0.1:6123 or [::1]:6123), got "localhost"',
    );
  });

  it("exits 2 for a cancel of something that is no job id", async () => {
    const { code, stderr } = await sluice("cancel", "not-a-job");
    expect(code).toBe(2);
    expect(stderr).toContain('a job id is 32 hex digits, got "not-a-job"');
  });

  it("says which REST endpoint it could not reach", async () => {
    const port = await freePort();
    const { code, stderr } = await sluice("list", "--jobmanager", `127.0.0.1:${port}`);
    expect(code).toBe(2);
    expect(stderr).toContain(
      `cannot reach the job manager's REST endpoint (GET http://127.0.0.1:${port}/jobs/overview)`,
    );
    expect(stderr).toContain("ECONNREFUSED");
  });
});
