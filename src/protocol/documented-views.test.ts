import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { documentedViewFields, type DocumentedView } from "./views.js";

/** The JSON shapes of `--json` are documented in the ctl guide, under "JSON output". */
const readme = readFileSync(new URL("../../docs/ctl.md", import.meta.url), "utf8");

/** Where docs/ctl.md documents a shape ("`Model`: `name`, ..."), up to the next bullet or blank line. */
function readmeParagraph(shape: string): string | undefined {
  const start = readme.indexOf(`\`${shape}\`: `);
  if (start < 0) return undefined;
  const rest = readme.slice(start);
  const end = rest.search(/\n- |\n\n/);
  return end < 0 ? rest : rest.slice(0, end);
}

/** Every name written in code spans: `scaling` `{min, max, idle_timeout}` gives scaling, min, max, idle_timeout. */
function namesInCode(text: string): Set<string> {
  const names = new Set<string>();
  for (const [, code] of text.matchAll(/`([^`]+)`/g)) for (const name of (code as string).match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []) names.add(name);
  return names;
}

describe("the JSON shapes documented in docs/ctl.md", () => {
  it.each(Object.keys(documentedViewFields) as DocumentedView[])("documents every field of %s", (shape) => {
    const label = shape.startsWith("ctl ") ? shape : (shape.split(".")[0] as string);
    const paragraph = readmeParagraph(label);
    expect(paragraph, `docs/ctl.md does not document \`${label}\`: under JSON output`).toBeDefined();
    const documented = namesInCode(paragraph as string);
    expect(documentedViewFields[shape].filter((field) => !documented.has(field)), `fields of ${shape} missing from docs/ctl.md`).toEqual([]);
  });
});
