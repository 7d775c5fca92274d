import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, expect, it } from "vitest";
import { writeFileAtomically } from "./write-file-atomically.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), "sluice-atomic-write-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

it("replaces a file's content whole and leaves no temporary file beside it", async () => {
  const file = path.join(dir, "_metadata");
  await writeFileAtomically(file, "first");
  await writeFileAtomically(file, Buffer.from("second, longer"));
  expect(readFileSync(file, "utf8")).toBe("second, longer");
  expect(readdirSync(dir)).toEqual(["_metadata"]);
});

it("throws when it cannot write and leaves neither the file nor a temporary one", async () => {
  const file = path.join(dir, "missing-folder", "_metadata");
  await expect(writeFileAtomically(file, "x")).rejects.toMatchObject({ code: "ENOENT" });
  expect(readdirSync(dir)).toEqual([]);
});

it("leaves an application's own SIGTERM listener in charge while it writes: a process that stops on process.once('SIGTERM') ends by its listener, not by the signal", async () => {
  // Child processes run JavaScript: the built module, next to src/.
  const built = new URL("../../dist/util/write-file-atomically.js", import.meta.url);
  const file = path.join(dir, "state.json");
  // Writes without pause, so the signal comes during a write.
  const script = `
    import { writeFileAtomically } from ${JSON.stringify(built.href)};
    process.once("SIGTERM", () => setTimeout(() => process.exit(0), 20));
    const data = Buffer.alloc(256 * 1024, 7);
    for (let writes = 1; ; writes++) {
      await writeFileAtomically(${JSON.stringify(file)}, data);
      if (writes === 20) console.log("writing");
    }
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", script], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = once(child, "exit");
  await once(child.stdout, "data");
  child.kill("SIGTERM");
  const [code, signal] = await exited;
  expect({ code, signal }, `${fileURLToPath(built)}\n${stderr}`).toEqual({ code: 0, signal: null });
  expect(readFileSync(file).length).toBe(256 * 1024);
}, 20_000);
