import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

interface PackageManifest {
  readonly name?: string;
  readonly version?: string;
}

/**
 * The llmgw package's folder and manifest, found by walking up from this file,
 * so the same code works from src/ (tests) and dist/src/ (the built CLI).
 */
export const packageRoot: { readonly directory: string; readonly manifest: PackageManifest } = (() => {
  let directory = path.dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 6; depth += 1) {
    const candidate = path.join(directory, "package.json");
    if (existsSync(candidate)) {
      const manifest = JSON.parse(readFileSync(candidate, "utf8")) as PackageManifest;
      if (manifest.name === "llmgw") return { directory, manifest };
    }
    directory = path.dirname(directory);
  }
  throw new Error(`cannot find llmgw's package.json above ${fileURLToPath(import.meta.url)}; the installation is incomplete`);
})();

/** How to run this same llmgw as a child process: [node, bin/llmgw.js]. */
export function llmgwCommand(): string[] {
  return [process.execPath, path.join(packageRoot.directory, "bin", "llmgw.js")];
}
