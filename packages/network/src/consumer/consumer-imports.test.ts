import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const folder = new URL("./", import.meta.url);

/** Every module specifier a source file of this folder imports or re-exports. */
function specifiers(file: string): string[] {
  const text = readFileSync(new URL(file, folder), "utf8");
  return [...text.matchAll(/\b(?:from|import)\s*\(?\s*["']([^"']+)["']/g)].map(
    (match) => match[1] as string,
  );
}

describe("the consumer side's imports", () => {
  it("never reach into netty/: the connection code depends on the channels, not the other way", () => {
    const files = readdirSync(folder).filter((name) => name.endsWith(".ts"));
    expect(files).toContain("remote-input-channel.ts");
    const upward = files.flatMap((file) =>
      specifiers(file)
        .filter((specifier) => /(^|\/)netty\//.test(specifier))
        .map((specifier) => `${file} imports ${specifier}`),
    );
    expect(upward).toEqual([]);
  });
});
