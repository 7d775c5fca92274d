import { describe, expect, it } from "vitest";
import {
  nodeModulesCandidates,
  resolvePackageExports,
  splitPackageSpecifier,
  userConditions,
} from "./module-resolver.js";

const IMPORT = new Set(["node", "import"]);

describe("module resolution helpers", () => {
  it("splits scoped and unscoped names from their subpaths", () => {
    expect(splitPackageSpecifier("pkg")).toEqual({ name: "pkg", subpath: "." });
    expect(splitPackageSpecifier("pkg/a/b.js")).toEqual({ name: "pkg", subpath: "./a/b.js" });
    expect(splitPackageSpecifier("@s/pkg")).toEqual({ name: "@s/pkg", subpath: "." });
    expect(splitPackageSpecifier("@s/pkg/x")).toEqual({ name: "@s/pkg", subpath: "./x" });
    expect(splitPackageSpecifier("@s")).toBeUndefined();
    expect(splitPackageSpecifier(".hidden")).toBeUndefined();
  });

  it("walks up through node_modules folders, skipping node_modules/node_modules", () => {
    expect(nodeModulesCandidates("p", "/a/node_modules/b")).toEqual([
      "/a/node_modules/b/node_modules/p",
      "/a/node_modules/p",
      "/node_modules/p",
    ]);
  });

  it("resolves exports strings, condition objects in key order, arrays and patterns", () => {
    expect(resolvePackageExports("./i.js", ".", IMPORT)).toEqual({ target: "./i.js" });
    expect(resolvePackageExports({ require: "./c.cjs", import: "./m.js" }, ".", IMPORT)).toEqual({
      target: "./m.js",
    });
    expect(resolvePackageExports({ default: "./d.js", import: "./m.js" }, ".", IMPORT)).toEqual({
      target: "./d.js",
    });
    expect(resolvePackageExports({ ".": [{ worker: "./w.js" }, "./f.js"] }, ".", IMPORT)).toEqual({
      target: "./f.js",
    });
    expect(resolvePackageExports({ ".": { node: { import: "./n.js" } } }, ".", IMPORT)).toEqual({
      target: "./n.js",
    });
    expect(
      resolvePackageExports({ "./*": "./src/*.js", "./x/*": "./x/*.mjs" }, "./x/y", IMPORT),
    ).toEqual({
      target: "./x/y.mjs",
    });
  });

  it("falls through a matching condition whose nested conditions match nothing, as import() does", () => {
    // Node imports ./d.js from this package (checked against Node 20); resolve.exports 2.0.4
    // stops at "node" and finds nothing, which is why the loader keeps its own matching.
    expect(
      resolvePackageExports({ node: { require: "./c.cjs" }, default: "./d.js" }, ".", IMPORT),
    ).toEqual({ target: "./d.js" });
    expect(resolvePackageExports({ ".": ["../x.js", "./ok.js"] }, ".", IMPORT)).toEqual({
      target: "./ok.js",
    });
  });

  it("explains why a subpath is not exported", () => {
    expect(resolvePackageExports({ ".": "./i.js" }, "./other", IMPORT)).toEqual({
      problem: 'its "exports" has no entry for "./other"',
    });
    expect(resolvePackageExports({ ".": null }, ".", IMPORT)).toMatchObject({
      problem: expect.stringContaining("excludes"),
    });
    expect(
      resolvePackageExports({ "./*": "./src/*.js", "./internal/*": null }, "./internal/x", IMPORT),
    ).toMatchObject({ problem: expect.stringContaining("excludes") });
    expect(resolvePackageExports({ ".": "../escape.js" }, ".", IMPORT)).toMatchObject({
      problem: expect.stringContaining("invalid target"),
    });
    expect(resolvePackageExports({ ".": "./a.js", import: "./b.js" }, ".", IMPORT)).toMatchObject({
      problem: expect.stringContaining("mixes subpaths and conditions"),
    });
  });

  it("reads --conditions from exec arguments and NODE_OPTIONS", () => {
    expect(
      userConditions(["--conditions=a", "-C", "b", "--inspect"], "--conditions c -C=d"),
    ).toEqual(["a", "b", "c", "d"]);
    expect(userConditions([], undefined)).toEqual([]);
  });
});
