/**
 * Types flow from source to sink: a function given the wrong record type, a sink or serializer
 * of another type, or a keyed-state value of another type than the descriptor's does not
 * compile. The cases are in `test-support/type-errors.ts`, each marked `@ts-expect-error`; this
 * test compiles that file with the package's compiler options and expects no diagnostic, so a
 * case that compiles (its directive then unused) fails it, as `pnpm typecheck` does.
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const FIXTURE = path.join(HERE, "test-support/type-errors.ts");

function diagnosticsOf(file: string): string[] {
  const configPath = path.join(HERE, "../tsconfig.json");
  const config = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (config === undefined) throw new Error(`cannot read ${configPath}`);
  const program = ts.createProgram([file], { ...config.options, noEmit: true });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file?.getLineAndCharacterOfPosition(diagnostic.start ?? 0);
    return `${diagnostic.file?.fileName}:${(where?.line ?? 0) + 1}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`;
  });
}

describe("the typed API's types", () => {
  it("reject every wrong record type of the cases, and accept the right ones", () => {
    expect(diagnosticsOf(FIXTURE)).toEqual([]);
  }, 60_000);
});
