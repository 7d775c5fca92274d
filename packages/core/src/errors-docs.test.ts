import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ErrorCodes } from "./errors.js";

describe("docs/errors.md", () => {
  it("documents every error code", () => {
    const docs = readFileSync(new URL("../../../docs/errors.md", import.meta.url), "utf8");
    const missing = Object.values(ErrorCodes).filter((code) => !docs.includes(`\`${code}\``));
    expect(missing).toEqual([]);
  });
});
