import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { ErrorCodes, SluiceError } from "@sluice/core";
import { SHUFFLE_SERVICE_FACTORY_BRAND } from "@sluice/runtime-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Configuration } from "../config/configuration.js";
import {
  loadShuffleServiceFactoryWithInfo,
  ShuffleServiceLoader,
} from "./shuffle-service-loader.js";

const KEY = "shuffle-service-factory.class";

/** A plugin module: several export shapes, each recognisable by `kind`. */
const PLUGIN_SOURCE = `
const BRAND = Symbol.for("@sluice/shuffle-service-factory");
export class GoodFactory {
  [BRAND] = true;
  kind = "GoodFactory";
  createShuffleMaster() { return { kind: "master" }; }
  createShuffleEnvironment() { return { kind: "environment" }; }
}
export const objectFactory = {
  kind: "objectFactory",
  createShuffleMaster() { return { kind: "master" }; },
  createShuffleEnvironment() { return { kind: "environment" }; },
};
export class UnbrandedFactory {
  kind = "UnbrandedFactory";
  createShuffleMaster() {}
  createShuffleEnvironment() {}
}
export class HalfFactory {
  createShuffleMaster() {}
}
export class ThrowingFactory {
  constructor() { throw new Error("no license key configured"); }
}
export const arrowFactory = () => ({});
export const answer = 42;
export default class DefaultFactory {
  [BRAND] = true;
  kind = "DefaultFactory";
  createShuffleMaster() {}
  createShuffleEnvironment() {}
}
`;

let root: string;

beforeEach(() => {
  // realpath: on some systems tmpdir() is a symlink, and the loader reports real paths.
  root = realpathSync(mkdtempSync(path.join(tmpdir(), "sluice-loader-")));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

function write(file: string, text: string): string {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, text);
  return file;
}

/** Creates `<dir>/node_modules/<name>` with a package.json and files. */
function installPackage(
  dir: string,
  name: string,
  packageJson: Record<string, unknown>,
  files: Record<string, string>,
): string {
  const pkgDir = path.join(dir, "node_modules", ...name.split("/"));
  write(
    path.join(pkgDir, "package.json"),
    JSON.stringify({ name, version: "1.0.0", ...packageJson }),
  );
  for (const [file, text] of Object.entries(files)) write(path.join(pkgDir, file), text);
  return pkgDir;
}

/** An ESM-only plugin package: `exports` with an `import` condition and no `require`. */
function installEsmPlugin(dir: string, name: string, source = PLUGIN_SOURCE): string {
  return installPackage(
    dir,
    name,
    {
      type: "module",
      exports: { ".": { import: "./esm/index.js" }, "./package.json": "./package.json" },
    },
    { "esm/index.js": source },
  );
}

/** A config.yaml in `dir` that selects `value`. */
function configIn(dir: string, value: string): Configuration {
  const file = write(path.join(dir, "config.yaml"), `${KEY}: ${JSON.stringify(value)}\n`);
  return Configuration.fromYamlFile(file);
}

function configWithout(value: string): Configuration {
  return new Configuration().set(KEY, value);
}

function emptyDir(name: string): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

async function loadError(
  configuration: Configuration,
  code: string,
  options: { cwd?: string; conditions?: string[]; applicationDirs?: string[] } = {},
): Promise<SluiceError> {
  try {
    await ShuffleServiceLoader.loadShuffleServiceFactory(configuration, {
      cwd: emptyDir("cwd"),
      ...options,
    });
  } catch (error) {
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe(code);
    return error as SluiceError;
  }
  throw new Error(`expected ${code}`);
}

function kindOf(factory: unknown): unknown {
  return (factory as { kind?: unknown }).kind;
}

describe("ShuffleServiceLoader: where plugins are found", () => {
  it("loads an ESM-only package by bare name from the config file's folder, not from the working directory", async () => {
    const app = emptyDir("app");
    const pkgDir = installEsmPlugin(app, "acme-shuffle");
    const loaded = await loadShuffleServiceFactoryWithInfo(
      configIn(app, "acme-shuffle#GoodFactory"),
      {
        cwd: emptyDir("elsewhere"),
      },
    );
    expect(kindOf(loaded.factory)).toBe("GoodFactory");
    expect(loaded.factory[SHUFFLE_SERVICE_FACTORY_BRAND]).toBe(true);
    expect(loaded.file).toBe(path.join(pkgDir, "esm", "index.js"));
    expect(loaded.exportName).toBe("GoodFactory");
  });

  it("loads a scoped package from the working directory when there is no config file", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "@acme/shuffle");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout("@acme/shuffle#objectFactory"),
      {
        cwd: app,
      },
    );
    expect(kindOf(factory)).toBe("objectFactory");
  });

  it("searches the application folders after the working directory, and names them when it fails", async () => {
    const app = emptyDir("app");
    const elsewhere = emptyDir("elsewhere");
    installEsmPlugin(app, "@acme/shuffle");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout("@acme/shuffle#objectFactory"),
      { cwd: elsewhere, applicationDirs: [app] },
    );
    expect(kindOf(factory)).toBe("objectFactory");
    const error = await loadError(configWithout("@acme/missing#F"), ErrorCodes.PLUGIN_NOT_FOUND, {
      cwd: elsewhere,
      applicationDirs: [app],
    });
    expect(error.message).toContain(`the application folder ${app}`);
  });

  it("finds a package installed in a parent folder, as Node does", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const nested = emptyDir("app/config/prod");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(nested, "acme-shuffle#GoodFactory"),
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("prefers the config file's folder over the working directory", async () => {
    const app = emptyDir("app");
    const other = emptyDir("other");
    installEsmPlugin(app, "acme-shuffle");
    installEsmPlugin(
      other,
      "acme-shuffle",
      PLUGIN_SOURCE.replace('kind = "GoodFactory"', 'kind = "wrong copy"'),
    );
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(app, "acme-shuffle#GoodFactory"),
      {
        cwd: other,
      },
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("resolves a package subpath through the exports map", async () => {
    const app = emptyDir("app");
    installPackage(
      app,
      "acme-shuffle",
      { type: "module", exports: { ".": "./main.js", "./plugins/*": "./lib/*.js" } },
      { "main.js": "export default {}", "lib/tcp.js": PLUGIN_SOURCE },
    );
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(app, "acme-shuffle/plugins/tcp#UnbrandedFactory"),
    );
    expect(kindOf(factory)).toBe("UnbrandedFactory");
  });

  it("honours extra export conditions", async () => {
    const app = emptyDir("app");
    installPackage(
      app,
      "acme-shuffle",
      { type: "module", exports: { "@acme/source": "./source.js", default: "./dist.js" } },
      {
        "source.js": PLUGIN_SOURCE.replace('kind = "DefaultFactory"', 'kind = "from source"'),
        "dist.js": PLUGIN_SOURCE,
      },
    );
    const config = configIn(app, "acme-shuffle");
    expect(kindOf(await ShuffleServiceLoader.loadShuffleServiceFactory(config))).toBe(
      "DefaultFactory",
    );
    const fromSource = await ShuffleServiceLoader.loadShuffleServiceFactory(config, {
      conditions: ["@acme/source"],
    });
    expect(kindOf(fromSource)).toBe("from source");
  });

  it("loads a CommonJS package through main, with default and named exports", async () => {
    const app = emptyDir("app");
    installPackage(
      app,
      "legacy-shuffle",
      { main: "lib/index" },
      {
        "lib/index.js": `
          class Factory { createShuffleMaster() {} createShuffleEnvironment() {} }
          Factory.prototype.kind = "cjs class";
          module.exports = { Factory, createShuffleMaster() {}, createShuffleEnvironment() {}, kind: "cjs object" };
        `,
      },
    );
    expect(
      kindOf(await ShuffleServiceLoader.loadShuffleServiceFactory(configIn(app, "legacy-shuffle"))),
    ).toBe("cjs object");
    expect(
      kindOf(
        await ShuffleServiceLoader.loadShuffleServiceFactory(
          configIn(app, "legacy-shuffle#Factory"),
        ),
      ),
    ).toBe("cjs class");
  });

  it("loads a relative path from the config file's folder", async () => {
    const app = emptyDir("app");
    write(path.join(app, "plugins", "my-plugin.mjs"), PLUGIN_SOURCE);
    const configDir = emptyDir("app/conf");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(configDir, "../plugins/my-plugin.mjs#GoodFactory"),
      { cwd: emptyDir("elsewhere") },
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("loads a relative path from the working directory when there is no config file", async () => {
    const app = emptyDir("app");
    write(path.join(app, "my-plugin.mjs"), PLUGIN_SOURCE);
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout("./my-plugin.mjs#GoodFactory"),
      {
        cwd: app,
      },
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("loads an absolute path", async () => {
    const file = write(path.join(root, "abs", "plugin.mjs"), PLUGIN_SOURCE);
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout(`${file}#GoodFactory`),
      {
        cwd: emptyDir("cwd"),
      },
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("loads a file: URL", async () => {
    const file = write(path.join(root, "url dir", "plugin.mjs"), PLUGIN_SOURCE);
    const url = pathToFileURL(file).href;
    expect(url).toContain("%20");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout(`${url}#objectFactory`),
      {
        cwd: emptyDir("cwd"),
      },
    );
    expect(kindOf(factory)).toBe("objectFactory");
  });

  it("loads a package folder given as a path", async () => {
    const pkgDir = installEsmPlugin(emptyDir("app"), "acme-shuffle");
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configWithout(`${pkgDir}#GoodFactory`),
      {
        cwd: emptyDir("cwd"),
      },
    );
    expect(kindOf(factory)).toBe("GoodFactory");
  });

  it("expands the ws alias to @sluice/shuffle-ws#WsShuffleServiceFactory, resolved from the application", async () => {
    const app = emptyDir("app");
    installEsmPlugin(
      app,
      "@sluice/shuffle-ws",
      `${PLUGIN_SOURCE}\nexport { GoodFactory as WsShuffleServiceFactory };\n`,
    );
    const factory = await ShuffleServiceLoader.loadShuffleServiceFactory(configIn(app, "ws"));
    expect(kindOf(factory)).toBe("GoodFactory");
  });
});

describe("ShuffleServiceLoader: export shapes", () => {
  it("uses the default export when the value has no #", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    expect(
      kindOf(await ShuffleServiceLoader.loadShuffleServiceFactory(configIn(app, "acme-shuffle"))),
    ).toBe("DefaultFactory");
  });

  it("constructs a class export with no arguments and uses an object export as it is", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const fromClass = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(app, "acme-shuffle#GoodFactory"),
    );
    expect(fromClass.constructor.name).toBe("GoodFactory");
    const fromObject = await ShuffleServiceLoader.loadShuffleServiceFactory(
      configIn(app, "acme-shuffle#objectFactory"),
    );
    expect(fromObject.constructor).toBe(Object);
    expect(
      fromObject.createShuffleMaster({ configuration: new Configuration(), onFatalError() {} }),
    ).toEqual({ kind: "master" });
  });

  it("accepts an unbranded factory that has both methods", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    expect(
      kindOf(
        await ShuffleServiceLoader.loadShuffleServiceFactory(
          configIn(app, "acme-shuffle#UnbrandedFactory"),
        ),
      ),
    ).toBe("UnbrandedFactory");
  });
});

describe("ShuffleServiceLoader: failures", () => {
  it("reports a missing package with the key, the value and every folder it looked in", async () => {
    const app = emptyDir("app");
    const cwd = emptyDir("cwd");
    const error = await loadError(
      configIn(app, "missing-shuffle#Factory"),
      ErrorCodes.PLUGIN_NOT_FOUND,
      { cwd },
    );
    expect(error.name).toBe("PluginNotFoundError");
    expect(error.message).toContain(`${KEY} = "missing-shuffle#Factory"`);
    expect(error.message).toContain(`(set in ${path.join(app, "config.yaml")})`);
    expect(error.message).toContain(`the config file's folder ${app}`);
    expect(error.message).toContain(path.join(app, "node_modules", "missing-shuffle"));
    expect(error.message).toContain(`the working directory ${cwd}`);
    expect(error.message).toContain(path.join(cwd, "node_modules", "missing-shuffle"));
  });

  it("never resolves a plugin from @sluice/runtime's own dependencies", async () => {
    // yaml is a dependency of @sluice/runtime; an application without it must not see it.
    const error = await loadError(configWithout("yaml#parse"), ErrorCodes.PLUGIN_NOT_FOUND);
    expect(error.message).toContain('cannot find package "yaml"');
  });

  it("reports the default value as the default when it cannot be found", async () => {
    const error = await loadError(new Configuration(), ErrorCodes.PLUGIN_NOT_FOUND);
    expect(error.message).toContain(
      `${KEY} = "@sluice/shuffle-tcp#TcpShuffleServiceFactory" (the default)`,
    );
  });

  it("reports an alias together with what it stands for", async () => {
    const error = await loadError(configWithout("tcp"), ErrorCodes.PLUGIN_NOT_FOUND);
    expect(error.message).toContain(
      `${KEY} = "tcp" (alias of "@sluice/shuffle-tcp#TcpShuffleServiceFactory")`,
    );
  });

  it("reports a package whose exports offer no import entry", async () => {
    const app = emptyDir("app");
    installPackage(
      app,
      "cjs-only",
      { exports: { require: "./index.cjs" } },
      { "index.cjs": "module.exports = {}" },
    );
    const error = await loadError(configIn(app, "cjs-only"), ErrorCodes.PLUGIN_NOT_FOUND);
    expect(error.message).toContain(
      `found package cjs-only at ${path.join(app, "node_modules", "cjs-only")}`,
    );
    expect(error.message).toContain("matches none of the conditions");
  });

  it("reports a missing file for a relative path, naming the resolved path", async () => {
    const app = emptyDir("app");
    const error = await loadError(
      configIn(app, "./plugins/nope.js#Factory"),
      ErrorCodes.PLUGIN_NOT_FOUND,
    );
    expect(error.message).toContain(`cannot find module ${path.join(app, "plugins", "nope.js")}`);
    expect(error.message).toContain(`relative to the config file's folder ${app}`);
    expect(error.message).toContain("does not exist");
  });

  it("reports a missing export, listing the exports the module has", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const error = await loadError(
      configIn(app, "acme-shuffle#TcpFactory"),
      ErrorCodes.PLUGIN_EXPORT_MISSING,
    );
    expect(error.name).toBe("PluginExportMissingError");
    expect(error.message).toContain(`${KEY} = "acme-shuffle#TcpFactory"`);
    expect(error.message).toContain('has no export named "TcpFactory"');
    expect(error.message).toContain(
      "it exports: GoodFactory, HalfFactory, ThrowingFactory, UnbrandedFactory, answer, arrowFactory, default, objectFactory",
    );
  });

  it("reports a missing default export and suggests a named one", async () => {
    const file = write(path.join(root, "named-only.mjs"), "export class Factory {}\n");
    const error = await loadError(configWithout(file), ErrorCodes.PLUGIN_EXPORT_MISSING);
    expect(error.message).toContain("has no default export; it exports: Factory");
    expect(error.message).toContain(`"${file}#Factory"`);
  });

  it("reports an export that lacks a factory method, listing what is missing and what it found", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const error = await loadError(
      configIn(app, "acme-shuffle#HalfFactory"),
      ErrorCodes.PLUGIN_INVALID,
    );
    expect(error.name).toBe("PluginInvalidError");
    expect(error.message).toContain(`${KEY} = "acme-shuffle#HalfFactory"`);
    expect(error.message).toContain(
      "is not a ShuffleServiceFactory: it lacks createShuffleEnvironment()",
    );
    expect(error.message).not.toContain("lacks createShuffleMaster");
    expect(error.message).toContain(
      "found an instance of class HalfFactory with members createShuffleMaster",
    );
  });

  it.each([
    ["answer", "found 42"],
    ["arrowFactory", "cannot be called with new"],
  ])("reports the export %s as not a factory", async (name, found) => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const error = await loadError(configIn(app, `acme-shuffle#${name}`), ErrorCodes.PLUGIN_INVALID);
    expect(error.message).toContain(found);
  });

  it("reports a throwing constructor, keeping its error as the cause", async () => {
    const app = emptyDir("app");
    installEsmPlugin(app, "acme-shuffle");
    const error = await loadError(
      configIn(app, "acme-shuffle#ThrowingFactory"),
      ErrorCodes.PLUGIN_INSTANTIATION,
    );
    expect(error.name).toBe("PluginInstantiationError");
    expect(error.message).toContain(`${KEY} = "acme-shuffle#ThrowingFactory"`);
    expect(error.message).toContain('new ThrowingFactory() (export "ThrowingFactory"');
    expect(error.message).toContain("threw: no license key configured");
    expect((error.cause as Error).message).toBe("no license key configured");
  });

  it("reports a module that throws while it is evaluated", async () => {
    const file = write(
      path.join(root, "broken.mjs"),
      'throw new TypeError("plugin cannot start");\n',
    );
    const error = await loadError(
      configWithout(`${file}#Factory`),
      ErrorCodes.PLUGIN_INSTANTIATION,
    );
    expect(error.message).toContain(`loading module ${file} threw: plugin cannot start`);
    expect(error.cause).toBeInstanceOf(TypeError);
  });

  it.each([
    ["pkg#", /expected a plugin reference/],
    ["#Factory", /expected a plugin reference/],
    ["https://example.com/plugin.js#Factory", /the "https:" scheme is not supported/],
  ])("rejects the malformed value %j as a configuration error", async (value, message) => {
    const error = await loadError(configWithout(value), ErrorCodes.CONFIG);
    expect(error.message).toMatch(message);
    expect(error.message).toContain(KEY);
  });
});
