import { readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * What `npm install -g llmgw` installs is package.json's `dependencies` (and
 * the optional llama.cpp builds), never its devDependencies. The server, the
 * agent and the CLI run from dist/src and bin/, so every package they import
 * at run time must be a dependency, and a dependency nothing imports is weight
 * every user downloads for nothing (the console's libraries are built into
 * dist/console by Vite and are devDependencies). Type-only imports vanish
 * from the build and count for neither.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
};

/** The files that ship and run: src/ and bin/ without tests and test fixtures (tsconfig.build.json leaves those out too). */
function shippedFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === "testing" ? [] : shippedFiles(full);
    if (!/\.(ts|js)$/.test(entry.name) || entry.name.endsWith(".test.ts") || entry.name === "test-launch-input.ts") return [];
    return [full];
  });
}

/** Bare specifiers a file loads at run time: value imports, re-exports, dynamic import(). */
export function runtimeSpecifiers(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && !node.importClause?.isTypeOnly) found.push(node.moduleSpecifier.text);
    else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier) && !node.isTypeOnly) found.push(node.moduleSpecifier.text);
    else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const first = node.arguments[0];
      if (first && ts.isStringLiteralLike(first)) found.push(first.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found.filter((specifier) => !specifier.startsWith(".") && !specifier.startsWith("node:") && !builtinModules.includes(specifier));
}

/** "@scope/name/sub" → "@scope/name"; "name/sub" → "name". */
export function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

function importedPackages(): Map<string, string[]> {
  const users = new Map<string, string[]>();
  for (const file of [...shippedFiles(path.join(root, "src")), ...shippedFiles(path.join(root, "bin"))]) {
    for (const specifier of runtimeSpecifiers(file, readFileSync(file, "utf8"))) {
      const name = packageOf(specifier);
      users.set(name, [...(users.get(name) ?? []), path.relative(root, file)]);
    }
  }
  return users;
}

describe("the installed package's dependencies", () => {
  const imported = importedPackages();
  const runtime = new Set([...Object.keys(manifest.dependencies ?? {}), ...Object.keys(manifest.optionalDependencies ?? {})]);

  it("lists every package the server, agent and CLI import at run time", () => {
    const missing = [...imported].filter(([name]) => !runtime.has(name)).map(([name, files]) => `${name} (imported by ${files.slice(0, 3).join(", ")})`);
    expect(missing, "move these to dependencies in package.json: a global install leaves devDependencies out").toEqual([]);
  });

  it("lists nothing that src/ and bin/ never import", () => {
    const unused = [...runtime].filter((name) => !imported.has(name));
    expect(unused, "nothing in src/ or bin/ imports these: move them to devDependencies (the console's libraries are built into dist/console)").toEqual([]);
  });

  it("keeps the console's libraries out of what users install", () => {
    for (const name of ["react", "react-dom", "react-router", "@mantine/core", "@codemirror/view", "@tanstack/react-query", "uplot", "vite"]) {
      expect(manifest.dependencies?.[name], name).toBeUndefined();
      expect(manifest.devDependencies?.[name], name).toBeDefined();
    }
  });

  it("finds value imports and skips type-only ones", () => {
    const text = 'import type { A } from "only-types";\nimport { b } from "@scope/pkg/sub";\nexport { c } from "re-exported";\nconst d = await import("dynamic");\nimport "node:fs";\nimport x from "./local.js";';
    expect(runtimeSpecifiers("x.ts", text).map(packageOf)).toEqual(["@scope/pkg", "re-exported", "dynamic"]);
  });
});
