import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ErrorCodes } from "@sluice/core";
import { afterEach, describe, expect, it } from "vitest";
import { ConformanceWorkerNotFoundError } from "../errors.js";
import { resolveWorkerScript } from "./worker-script.js";

const PACKAGE_DIR = fileURLToPath(new URL("../..", import.meta.url));

const scratch: string[] = [];
afterEach(() => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * An installed copy of the kit's compiled files, as a package manager lays it out: the module of
 * `conformance/` and, unless `withWorker` is false, the worker script. Returns the module's URL.
 */
function installedCopy(withWorker: boolean): { moduleUrl: string; dist: string } {
  const root = mkdtempSync(path.join(tmpdir(), "sluice-tck-worker-script-"));
  scratch.push(root);
  const dist = path.join(root, "node_modules/@sluice/shuffle-tck/dist");
  mkdirSync(path.join(dist, "conformance"), { recursive: true });
  mkdirSync(path.join(dist, "worker"));
  const module = path.join(dist, "conformance/worker-process.js");
  writeFileSync(module, "export {};\n");
  if (withWorker) writeFileSync(path.join(dist, "worker/worker.js"), "export {};\n");
  return { moduleUrl: pathToFileURL(module).href, dist };
}

describe("the conformance worker's script", () => {
  it("is the package's compiled worker when the kit runs from its TypeScript sources", () => {
    const source = new URL("./worker-process.ts", import.meta.url).href;
    expect(resolveWorkerScript(source)).toBe(path.join(PACKAGE_DIR, "dist/worker/worker.js"));
  });

  it("is the worker next to the compiled module in the package's own dist/", () => {
    const compiled = pathToFileURL(path.join(PACKAGE_DIR, "dist/conformance/worker-process.js"));
    expect(resolveWorkerScript(compiled.href)).toBe(
      path.join(PACKAGE_DIR, "dist/worker/worker.js"),
    );
  });

  it("is the installed copy's own worker under node_modules, never the module that forks it", () => {
    const { moduleUrl, dist } = installedCopy(true);
    const worker = resolveWorkerScript(moduleUrl);
    expect(worker).toBe(path.join(dist, "worker/worker.js"));
    expect(worker).not.toBe(fileURLToPath(moduleUrl));
  });

  it("fails with SLUICE_ERR_TCK_WORKER_NOT_FOUND naming the missing file when the copy lacks it", () => {
    const { moduleUrl, dist } = installedCopy(false);
    let thrown: unknown;
    try {
      resolveWorkerScript(moduleUrl);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConformanceWorkerNotFoundError);
    expect(thrown).toMatchObject({
      code: ErrorCodes.TCK_WORKER_NOT_FOUND,
      name: "ConformanceWorkerNotFoundError",
    });
    expect((thrown as Error).message).toContain(path.join(dist, "worker/worker.js"));
    expect((thrown as Error).message).toContain("reinstall");
  });

  it("refuses a module that is neither compiled JavaScript nor TypeScript source", () => {
    const bundled = pathToFileURL(path.join(tmpdir(), "bundle/conformance/kit.cjs")).href;
    expect(() => resolveWorkerScript(bundled)).toThrow(
      expect.objectContaining({
        code: ErrorCodes.TCK_WORKER_NOT_FOUND,
        message: expect.stringContaining("neither compiled JavaScript (.js) nor TypeScript"),
      }),
    );
  });
});
