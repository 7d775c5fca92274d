import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** Every module specifier a source file imports or re-exports (static and dynamic). */
function specifiersOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found: string[] = [];
  for (const match of text.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
    found.push(match[1] as string);
  }
  return found;
}

/** The bare packages reachable from `entry` through relative imports. */
function packagesReachableFrom(entry: string): { packages: Set<string>; files: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of specifiersOf(file)) {
      if (specifier.startsWith(".")) {
        pending.push(path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")));
      } else {
        packages.add(specifier);
      }
    }
  }
  return { packages, files };
}

describe("entry points of @sluice/core", () => {
  it("keeps vitest out of everything the main entry point imports", () => {
    const { packages, files } = packagesReachableFrom(path.join(SRC, "index.ts"));
    expect(files.size).toBeGreaterThan(20);
    expect([...packages].filter((name) => !name.startsWith("node:"))).toEqual([]);
    expect([...files].filter((file) => file.includes(`${path.sep}testing${path.sep}`))).toEqual([]);
  });

  it("keeps every test runner out of the test-certificates subpath, which scripts and benchmarks import", () => {
    const { packages } = packagesReachableFrom(path.join(SRC, "testing", "test-pki.ts"));
    expect([...packages].filter((name) => !name.startsWith("node:"))).toEqual([]);
  });

  it("lets only the testing subpath import vitest", () => {
    const { packages } = packagesReachableFrom(path.join(SRC, "testing", "index.ts"));
    expect(packages).toContain("vitest");
  });
});
