import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { refusalOf as failure } from "../../test/support/refusal.js";
import { DomainError } from "../errors/domain-error.js";
import { parseModelFile } from "./model-file.js";
import { maxDetails } from "./schema-errors.js";
import { loadServerConfig } from "./server-config.js";
import { maxYamlBytes, maxYamlNesting, parseYamlSource } from "./yaml-source.js";

const billionLaughs = [
  "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]",
  "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]",
  "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]",
  "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]",
  "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]",
  "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]",
  "name: [*f, *f, *f, *f, *f, *f, *f, *f, *f]",
  "",
].join("\n");

/** Pieces of YAML syntax, valid and broken, that fuzzing joins into files. */
const yamlPiece = fc.constantFrom(
  "name: m\n", "*a", "&a ", "&a [x, *a]", "<<: *a\n", "? [a]\n: b\n", "[", "]", "{", "}", ": ", "- ", "\n  ", "!!binary x", "!tag ", "%YAML 1.1\n", "---\n", "...\n",
  "'", '"', "|\n", ">-\n", "#", "\t", "\u0000", "\uFEFF", "name: [", "profiles: [{engine: vllm}]\n", "gpus: 1e400\n", "~", "null", "*", "&",
  "models:\n", "  - ", "nodes: { heartbeat_deadline: 0s }\n", "listen: 99999\n",
);

describe("hostile YAML in a model file", () => {
  it("refuses an alias with no anchor as invalid_yaml, naming its place", () => {
    const error = failure(() => parseModelFile("name: qwen\nowner: *nobody\n", "m.yaml"));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toBe("m.yaml:2:8: YAML aliases (*nobody) are not accepted");
    expect(error.hint).toContain("copy and paste");
  });

  it("refuses an alias bomb at its first alias, before anything is expanded", () => {
    const error = failure(() => parseModelFile(billionLaughs, "bomb.yaml"));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toBe("bomb.yaml:2:8: YAML aliases (*a) are not accepted");
  });

  it("refuses a file of a hundred thousand aliases of one small anchor", () => {
    const text = `name: m\nowner: &o team\nfallbacks: [${Array.from({ length: 100_000 }, () => "*o").join(", ")}]\n`;
    expect(failure(() => parseModelFile(text, "many.yaml")).message).toBe("many.yaml:3:13: YAML aliases (*o) are not accepted");
  });

  it("reads an asterisk inside quotes or a block scalar as text, not as an alias", () => {
    const entry = parseModelFile('name: m\nowner: "*team*"\nprofiles:\n  - engine: vllm\n    source: x\n    args: [ "*a", --x ]\n    env:\n      NOTE: |\n        *bold*\n', "m.yaml");
    expect(entry.owner).toBe("*team*");
    expect(entry.profiles?.[0]?.args).toEqual(["*a", "--x"]);
    expect(entry.profiles?.[0]?.env).toEqual({ NOTE: "*bold*\n" });
  });

  it("refuses a key written twice, naming both places", () => {
    const error = failure(() => parseModelFile("name: a\nowner: x\nowner: y\n", "twice.yaml"));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toBe('twice.yaml:3:1: key "owner" is already set at twice.yaml:2:1');
  });

  it("refuses nesting deep enough to exhaust the parser as invalid_yaml", () => {
    const error = failure(() => parseModelFile(`name: ${"[".repeat(50_000)}${"]".repeat(50_000)}\n`, "deep.yaml"));
    expect(error.code).toBe("invalid_yaml");
  });

  it("refuses a file over the size llmgw reads, stating the limit", () => {
    const error = failure(() => parseModelFile(`name: m\nowner: ${"x".repeat(maxYamlBytes)}\n`, "huge.yaml"));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toContain("over the 1 MiB llmgw reads");
  });

  it("lists the first unknown keys of tens of thousands and counts the rest", () => {
    const keys = Array.from({ length: 30_000 }, (_, index) => `unknown_${index}: ${index}`).join("\n");
    const error = failure(() => parseModelFile(`name: m\n${keys}\n`, "keys.yaml"));
    expect(error.code).toBe("unknown_key");
    expect(error.details).toHaveLength(maxDetails + 1);
    expect(error.details[0]).toMatchObject({ where: "keys.yaml:2:1: unknown_0" });
    expect(error.details.at(-1)).toEqual({ where: "(more)", message: `and ${30_000 - maxDetails} more problems not listed` });
    expect(error.message).toContain("(and 29999 more problems)");
  });

  it("never crashes on hostile or random YAML: always invalid_yaml, invalid_input or unknown_key (property)", () => {
    fc.assert(
      fc.property(fc.array(yamlPiece, { maxLength: 40 }), fc.string({ maxLength: 30 }), (pieces, noise) => {
        const text = pieces.join("") + noise;
        try {
          parseModelFile(text, "fuzz.yaml");
        } catch (error) {
          expect(error, `${JSON.stringify(text)} threw ${String(error)}`).toBeInstanceOf(DomainError);
          expect(["invalid_yaml", "invalid_input", "unknown_key"]).toContain((error as DomainError).code);
        }
      }),
      { numRuns: 2000 },
    );
  });
});

describe("hostile YAML in server.yaml", () => {
  const directory = mkdtempSync(path.join(tmpdir(), "llmgw-hostile-yaml-"));
  afterAll(() => rmSync(directory, { recursive: true, force: true }));
  const write = (name: string, text: string) => {
    const file = path.join(directory, name);
    writeFileSync(file, text);
    return file;
  };

  it("refuses every kind of deep nesting by naming the file, the place and the limit, never the parser's stack", () => {
    const blockLevels = Array.from({ length: 200 }, (_, level) => `${" ".repeat(level + 1)}a:`).join("\n");
    const deep = {
      flowLists: `name: ${"[".repeat(50_000)}${"]".repeat(50_000)}\n`,
      flowMaps: `name: ${"{a: ".repeat(20_000)}1${"}".repeat(20_000)}\n`,
      blockMaps: `name: m\nx:\n${blockLevels} 1\n`,
      compactLists: `name: m\nx: \n  ${"- ".repeat(20_000)}1\n`,
    };
    for (const [kind, text] of Object.entries(deep)) {
      const serverYaml = (body: string) => loadServerConfig(write("deep.yaml", body));
      for (const parse of [(body: string) => parseModelFile(body, "deep.yaml"), serverYaml]) {
        const error = failure(() => parse(text));
        expect(error.code, kind).toBe("invalid_yaml");
        expect(error.message, kind).toMatch(new RegExp(`^deep\\.yaml(:\\d+:\\d+)?: the YAML is nested more than ${maxYamlNesting} levels deep`));
        expect(error.hint, kind).toContain(`at most ${maxYamlNesting} levels`);
      }
    }
  });

  it("reads a file nested as deep as the limit", () => {
    const value = parseYamlSource(`${"[".repeat(maxYamlNesting)}1${"]".repeat(maxYamlNesting)}\n`, "ok.yaml").value;
    let depth = 0;
    for (let at: unknown = value; Array.isArray(at); at = at[0]) depth += 1;
    expect(depth).toBe(maxYamlNesting);
  });

  it("refuses an alias bomb at start as invalid_yaml with its place", () => {
    const error = failure(() => loadServerConfig(write("bomb.yaml", billionLaughs)));
    expect(error.code).toBe("invalid_yaml");
    expect(error.message).toBe("bomb.yaml:2:8: YAML aliases (*a) are not accepted");
  });

  it("caps the problems listed for a server.yaml of tens of thousands of unknown keys", () => {
    const file = write("keys.yaml", Array.from({ length: 20_000 }, (_, index) => `setting_${index}: on`).join("\n"));
    const error = failure(() => loadServerConfig(file));
    expect(error.code).toBe("unknown_key");
    expect(error.details).toHaveLength(maxDetails + 1);
    expect(JSON.stringify(error.details).length).toBeLessThan(20_000);
  });

  it("never crashes the server's start on hostile or random YAML: always a DomainError (property)", () => {
    const file = path.join(directory, "fuzz.yaml");
    fc.assert(
      fc.property(fc.array(yamlPiece, { maxLength: 40 }), fc.string({ maxLength: 30 }), (pieces, noise) => {
        writeFileSync(file, pieces.join("") + noise);
        try {
          loadServerConfig(file, {}, {});
        } catch (error) {
          expect(error, `${JSON.stringify(pieces.join("") + noise)} threw ${String(error)}`).toBeInstanceOf(DomainError);
        }
      }),
      { numRuns: 500 },
    );
  });
});
