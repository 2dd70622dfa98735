import { writeFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { stringify } from "yaml";
import { describe, expect, it } from "vitest";
import { parseModelFile } from "../../../src/catalog/model-file.js";
import { loadServerConfig } from "../../../src/catalog/server-config.js";
import { DomainError } from "../../../src/errors/domain-error.js";
import { parseExportFile } from "../../../src/cli/ctl/export-file.js";
import { temporaryDirectory } from "../../support/temporary-directory.js";
import { FailureCounter, reportChaos } from "../chaos-report.js";

/**
 * Random and malformed files where a person types them (server.yaml, a model
 * file, an export to import): each one is either read or refused with a
 * DomainError that names the place and the fix. Anything else (a TypeError, a
 * stack overflow, a message without a hint) is a crash at the terminal.
 */
const validModel = {
  name: "chat",
  class: "standard",
  scaling: { min: 1, max: 2 },
  profiles: [{ name: "gpu", engine: "vllm", gpus: 1, source: "hf://org/model@0123456789abcdef0123456789abcdef01234567" }],
  aliases: ["chat-latest"],
};
const validServer = { listen: "127.0.0.1:8080", models: [validModel] };
const validExport = { version: 1, models: [{ name: "x", external: { base_url: "http://127.0.0.1:9/v1" } }], versions: [], keys: [], tokens: [{ name: "admin", role: "admin" }] };

/** A valid document with one value somewhere replaced by anything, or a key added, or the whole thing replaced. */
function mutated(base: unknown): fc.Arbitrary<unknown> {
  const anything = fc.anything({ maxDepth: 3, withNullPrototype: false });
  const paths = (value: unknown, prefix: (string | number)[] = []): (string | number)[][] => {
    if (typeof value !== "object" || value === null) return [prefix];
    const entries = Array.isArray(value) ? value.map((item, index) => [index, item] as const) : Object.entries(value);
    return [prefix, ...entries.flatMap(([key, item]) => paths(item, [...prefix, key]))];
  };
  const all = paths(base);
  const replace = (value: unknown, where: readonly (string | number)[], by: unknown): unknown => {
    if (where.length === 0) return by;
    const [head, ...rest] = where;
    const copy = (Array.isArray(value) ? [...(value as unknown[])] : { ...(value as object) }) as Record<string | number, unknown>;
    copy[head as string] = replace(copy[head as string], rest, by);
    return copy;
  };
  return fc.oneof(
    fc.tuple(fc.constantFrom(...all), anything).map(([where, by]) => replace(base, where, by)),
    fc.tuple(fc.constantFrom(...all.filter((where) => where.length < 3)), fc.string({ maxLength: 12 }), anything).map(([where, key, by]) => replace(base, [...where, key], by)),
    anything,
  );
}

/** Text: the mutated document as YAML, or that YAML cut short or with bytes changed, or random text. */
function texts(base: unknown): fc.Arbitrary<string> {
  const asYaml = mutated(base).map((value) => {
    try {
      return (stringify(value) as string | undefined) ?? "";
    } catch {
      return String(value);
    }
  });
  return fc.oneof(
    asYaml,
    fc.tuple(asYaml, fc.nat()).map(([text, cut]) => text.slice(0, cut % (text.length + 1))),
    fc.tuple(asYaml, fc.nat(), fc.constantFrom(":", "- ", "\t", "{", "]", "&a", "*a", "!!binary", "\u0000", "'", "\n  ")).map(([text, at, bit]) => {
      const where = at % (text.length + 1);
      return text.slice(0, where) + bit + text.slice(where);
    }),
    fc.string({ maxLength: 200 }),
  );
}

function check(outcomes: FailureCounter, read: () => unknown): void {
  try {
    read();
    outcomes.count("read");
  } catch (error) {
    if (error instanceof DomainError && error.message.length > 0 && error.hint.length > 0) outcomes.count(`refused (${error.code})`);
    else {
      outcomes.count(`crash: ${(error as Error).name}: ${(error as Error).message.slice(0, 80)}`);
      throw error;
    }
  }
}

describe("fuzzed files: read or refused clearly, never a crash", () => {
  const runs = Number(process.env.LLMGW_CHAOS_FUZZ_RUNS ?? 2000);

  it.each([
    { what: "server.yaml", base: validServer, read: (text: string, folder: string) => {
        const file = path.join(folder, "server.yaml");
        writeFileSync(file, text);
        return loadServerConfig(file, {}, {});
      } },
    { what: "model file", base: validModel, read: (text: string) => parseModelFile(text, "model.yaml") },
    { what: "export to import", base: validExport, read: (text: string) => parseExportFile(text, "catalog.yaml") },
  ])("$what", ({ what, base, read }) => {
    const folder = temporaryDirectory("llmgw-config-fuzz-");
    const outcomes = new FailureCounter();
    fc.assert(
      fc.property(texts(base), (text) => {
        check(outcomes, () => read(text, folder));
      }),
      { numRuns: runs, seed: 20261202 },
    );
    const crashes = [...outcomes.reasons].filter(([reason]) => reason.startsWith("crash"));
    reportChaos({
      scenario: `fuzz: ${what}`,
      sent: runs,
      succeeded: runs - crashes.reduce((sum, [, count]) => sum + count, 0),
      failed: crashes.reduce((sum, [, count]) => sum + count, 0),
      reasons: new Map(crashes),
      recovery: "n/a",
      notes: [...outcomes.reasons].filter(([reason]) => !reason.startsWith("crash")).map(([reason, count]) => `${reason} ${count}`).join(", "),
    });
    expect(crashes).toEqual([]);
  });
});
