import { readFileSync, realpathSync } from "node:fs";
import path from "node:path";
import { isDirectory, isFile } from "./path-kind.js";

/**
 * Node's ESM resolution of a package name, re-implemented for one purpose: resolving a plugin
 * package from the *application's* folders (the config file's folder, the working directory)
 * instead of from the module that calls `import()`, which would be @sluice/runtime itself and
 * would find only the runtime's own dependencies. Node 20 offers no public API for this
 * (`import.meta.resolve` takes no parent without a flag, and `require.resolve` uses the
 * `require` export condition, so it fails for ESM-only packages).
 *
 * Implemented: the `node_modules` lookup walking up from a folder, scoped names, subpaths, the
 * `exports` field (strings, arrays, condition objects in key order, `null` exclusions, `*`
 * patterns) with the `import` conditions, and `main` (plus Node's legacy index fallbacks) for
 * packages without `exports`. Not implemented: the `imports` field and self-references, which a
 * plugin reference never needs.
 *
 * The `exports` matching is Node's own algorithm rather than the `resolve.exports` package: that
 * package stops at the first matching condition even when its nested conditions match nothing
 * (Node goes on to the next one), returns invalid array targets, and cannot tell a `null`
 * exclusion from a missing entry, so plugins that `import()` loads would be refused or reported
 * wrongly.
 */

/** The export conditions Node 20.19+ uses for `import()`, plus `default` (always matched). */
export const DEFAULT_IMPORT_CONDITIONS: readonly string[] = ["node", "import", "module-sync"];

/** A package found on disk. */
export interface PackageLocation {
  /** The package name (`@scope/name` or `name`). */
  readonly name: string;
  /** The package folder. */
  readonly dir: string;
}

/** Result of resolving a bare specifier. */
export type BareResolution =
  | { readonly found: true; readonly file: string; readonly pkg: PackageLocation }
  | {
      readonly found: false;
      /** Every `node_modules/<name>` folder that was checked, by start folder. */
      readonly searched: readonly {
        readonly from: string;
        readonly candidates: readonly string[];
      }[];
      /** Set when the package folder exists but does not provide the subpath. */
      readonly problem?: string;
      readonly pkg?: PackageLocation;
    };

/** Splits `@scope/name/sub/path` into the package name and the subpath (`.` or `./sub/path`). */
export function splitPackageSpecifier(
  specifier: string,
): { readonly name: string; readonly subpath: string } | undefined {
  const parts = specifier.split("/");
  const nameParts = specifier.startsWith("@") ? 2 : 1;
  if (parts.length < nameParts || parts.slice(0, nameParts).some((p) => p === "")) return undefined;
  const name = parts.slice(0, nameParts).join("/");
  if (
    name.startsWith(".") ||
    name.includes("\\") ||
    name.includes("%") ||
    (nameParts === 2 && name === "@")
  ) {
    return undefined;
  }
  const rest = parts.slice(nameParts);
  return { name, subpath: rest.length === 0 ? "." : `./${rest.join("/")}` };
}

/** The `node_modules/<name>` folders Node would try from `fromDir`, nearest first. */
export function nodeModulesCandidates(name: string, fromDir: string): string[] {
  const candidates: string[] = [];
  let dir = path.resolve(fromDir);
  for (;;) {
    if (path.basename(dir) !== "node_modules")
      candidates.push(path.join(dir, "node_modules", name));
    const parent = path.dirname(dir);
    if (parent === dir) return candidates;
    dir = parent;
  }
}

type Target = string | null | undefined;

class InvalidPackageTarget extends Error {}

function resolveTarget(
  target: unknown,
  patternMatch: string | undefined,
  conditions: ReadonlySet<string>,
): Target {
  if (typeof target === "string") {
    if (!target.startsWith("./"))
      throw new InvalidPackageTarget(`invalid target ${JSON.stringify(target)}`);
    const segments = target.slice(2).split(/[/\\]/);
    if (segments.some((s) => s === ".." || s === "." || s.toLowerCase() === "node_modules")) {
      throw new InvalidPackageTarget(`invalid target ${JSON.stringify(target)}`);
    }
    return patternMatch === undefined ? target : target.replaceAll("*", patternMatch);
  }
  if (Array.isArray(target)) {
    let lastError: InvalidPackageTarget | undefined;
    for (const item of target) {
      try {
        const resolved = resolveTarget(item, patternMatch, conditions);
        if (resolved === undefined) continue;
        return resolved;
      } catch (error) {
        if (!(error instanceof InvalidPackageTarget)) throw error;
        lastError = error;
      }
    }
    if (lastError !== undefined) throw lastError;
    return undefined;
  }
  if (target === null) return null;
  if (typeof target === "object") {
    for (const [condition, value] of Object.entries(target as Record<string, unknown>)) {
      if (condition !== "default" && !conditions.has(condition)) continue;
      const resolved = resolveTarget(value, patternMatch, conditions);
      if (resolved === undefined) continue;
      return resolved;
    }
    return undefined;
  }
  return undefined;
}

/**
 * Resolves `subpath` (`.` or `./x`) through a package's `exports` to a path relative to the
 * package folder (`./dist/index.js`); `undefined` when nothing matches, with the reason.
 */
export function resolvePackageExports(
  exports: unknown,
  subpath: string,
  conditions: ReadonlySet<string>,
): { readonly target: string } | { readonly problem: string } {
  let map: Record<string, unknown>;
  if (typeof exports === "string" || Array.isArray(exports)) {
    map = { ".": exports };
  } else if (typeof exports === "object" && exports !== null) {
    const keys = Object.keys(exports);
    const dotted = keys.filter((key) => key.startsWith("."));
    if (dotted.length > 0 && dotted.length < keys.length) {
      return { problem: 'its "exports" mixes subpaths and conditions, which Node rejects' };
    }
    map = dotted.length === 0 ? { ".": exports } : (exports as Record<string, unknown>);
  } else {
    return { problem: 'its "exports" field is neither a string, an array nor an object' };
  }
  const conditionList = `conditions ${[...conditions, "default"].join(", ")}`;
  try {
    let resolved: Target;
    if (Object.hasOwn(map, subpath) && !subpath.includes("*")) {
      resolved = resolveTarget(map[subpath], undefined, conditions);
    } else {
      let bestKey: string | undefined;
      let bestMatch: string | undefined;
      for (const key of Object.keys(map)) {
        const star = key.indexOf("*");
        if (star < 0 || key.indexOf("*", star + 1) >= 0) continue;
        const prefix = key.slice(0, star);
        const suffix = key.slice(star + 1);
        if (
          subpath.length >= key.length &&
          subpath.startsWith(prefix) &&
          subpath.endsWith(suffix)
        ) {
          if (bestKey === undefined || prefix.length > bestKey.indexOf("*")) {
            bestKey = key;
            bestMatch = subpath.slice(prefix.length, subpath.length - suffix.length);
          }
        }
      }
      if (bestKey === undefined) {
        return { problem: `its "exports" has no entry for ${JSON.stringify(subpath)}` };
      }
      resolved = resolveTarget(map[bestKey], bestMatch, conditions);
    }
    if (resolved === null) {
      return { problem: `its "exports" excludes ${JSON.stringify(subpath)} (null target)` };
    }
    if (resolved === undefined) {
      return {
        problem: `its "exports" entry for ${JSON.stringify(subpath)} matches none of the ${conditionList}`,
      };
    }
    return { target: resolved };
  } catch (error) {
    if (error instanceof InvalidPackageTarget) {
      return {
        problem: `its "exports" entry for ${JSON.stringify(subpath)} has an ${error.message}`,
      };
    }
    throw error;
  }
}

function readPackageJson(
  dir: string,
): Record<string, unknown> | { readonly problem: string } | undefined {
  const file = path.join(dir, "package.json");
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    // No package.json is normal (a folder without one); anything else is the reason we fail.
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    return { problem: `cannot read ${file} (${(error as Error).message})` };
  }
  try {
    const json: unknown = JSON.parse(text);
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      return { problem: `${file} is not a JSON object` };
    }
    return json as Record<string, unknown>;
  } catch (error) {
    return { problem: `${file} is not valid JSON (${(error as Error).message})` };
  }
}

/**
 * Resolves the entry file of a package folder for `subpath`: through `exports` when present, else
 * through `main` with Node's legacy fallbacks (`.js`, `index.js`, ...) for `.`, else the file at
 * `subpath`. Returns the absolute file or the reason it failed.
 */
export function resolvePackageEntry(
  dir: string,
  subpath: string,
  conditions: ReadonlySet<string>,
): { readonly file: string } | { readonly problem: string } {
  const pkg = readPackageJson(dir);
  if (pkg !== undefined && "problem" in pkg && typeof pkg.problem === "string") {
    return { problem: pkg.problem };
  }
  const json = pkg as Record<string, unknown> | undefined;
  if (json?.exports !== undefined && json.exports !== null) {
    const resolved = resolvePackageExports(json.exports, subpath, conditions);
    if ("problem" in resolved) return resolved;
    const file = path.join(dir, resolved.target);
    return isFile(file)
      ? { file }
      : { problem: `its "exports" points to ${file}, which does not exist` };
  }
  if (subpath !== ".") {
    const file = path.join(dir, subpath);
    return isFile(file) ? { file } : { problem: `it has no file ${subpath.slice(2)} (${file})` };
  }
  const candidates: string[] = [];
  if (typeof json?.main === "string" && json.main !== "") {
    const main = path.join(dir, json.main);
    candidates.push(
      main,
      `${main}.js`,
      `${main}.json`,
      `${main}.node`,
      path.join(main, "index.js"),
    );
  }
  candidates.push(path.join(dir, "index.js"));
  const file = candidates.find(isFile);
  return file === undefined
    ? {
        problem: `it has neither "exports", a "main" file nor an index.js (looked for ${candidates.join(", ")})`,
      }
    : { file };
}

/**
 * Resolves a bare specifier (`pkg`, `@scope/pkg`, `pkg/sub/path.js`) the way `import()` would from
 * a module in each of `fromDirs`, trying the folders in order; the first folder in which the
 * package exists decides (as in Node, a package found but lacking the subpath is not looked for
 * further up). The returned file is the real path (symlinks resolved), so that a plugin is
 * loaded once however it is reached.
 */
export function resolveBareSpecifier(
  specifier: string,
  fromDirs: readonly string[],
  conditions: ReadonlySet<string>,
): BareResolution {
  const split = splitPackageSpecifier(specifier);
  if (split === undefined) {
    return {
      found: false,
      searched: [],
      problem: `${JSON.stringify(specifier)} is not a valid package name`,
    };
  }
  const searched: { from: string; candidates: string[] }[] = [];
  for (const from of fromDirs) {
    const candidates: string[] = [];
    for (const candidate of nodeModulesCandidates(split.name, from)) {
      candidates.push(candidate);
      if (!isDirectory(candidate)) continue;
      const pkg = { name: split.name, dir: candidate };
      const entry = resolvePackageEntry(candidate, split.subpath, conditions);
      searched.push({ from, candidates });
      if ("problem" in entry) {
        return {
          found: false,
          searched,
          pkg,
          problem: `found package ${split.name} at ${candidate}, but ${entry.problem}`,
        };
      }
      return { found: true, file: realpathSync(entry.file), pkg };
    }
    searched.push({ from, candidates });
  }
  return { found: false, searched };
}

/**
 * Export conditions the current process was started with (`--conditions`/`-C` in `execArgv` or
 * `NODE_OPTIONS`), which Node itself would apply to `import()`.
 */
export function userConditions(
  execArgv: readonly string[] = process.execArgv,
  nodeOptions: string | undefined = process.env.NODE_OPTIONS,
): string[] {
  const args = [...execArgv, ...(nodeOptions ?? "").split(/\s+/).filter((a) => a !== "")];
  const conditions: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] as string;
    const inline = /^(?:--conditions|-C)=(.+)$/.exec(arg);
    if (inline?.[1] !== undefined) conditions.push(inline[1]);
    else if ((arg === "--conditions" || arg === "-C") && args[i + 1] !== undefined) {
      conditions.push(args[i + 1] as string);
      i++;
    }
  }
  return conditions;
}
