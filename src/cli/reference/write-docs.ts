import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { packageRoot } from "../../package-root.js";
import { referencePaths, renderCtlReference, renderOpenApiReference } from "./render-references.js";

/** `npm run docs`: writes the generated references from the code. */
const written: Record<string, string> = {
  [referencePaths.ctl]: renderCtlReference(),
  [referencePaths.openapi]: await renderOpenApiReference(),
};
for (const [file, text] of Object.entries(written)) {
  const target = path.join(packageRoot.directory, file);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, text);
  process.stdout.write(`wrote ${file}\n`);
}
