import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const sourceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");

/** Relative specifiers of static imports and re-exports only: a dynamic import() runs when its command does. */
function staticSpecifiers(text: string): string[] {
  const pattern = /^\s*(?:import|export)\s+(?!type\b)(?:[^"';]*?\sfrom\s*)?["'](\.{1,2}\/[^"']+)["']/gm;
  return [...text.matchAll(pattern)].map((match) => match[1] ?? "");
}

/** Packages (bare specifiers) a file imports statically. */
function staticPackages(text: string): string[] {
  const pattern = /^\s*(?:import|export)\s+(?!type\b)(?:[^"';]*?\sfrom\s*)?["']([^."'][^"']*)["']/gm;
  return [...text.matchAll(pattern)].map((match) => match[1] ?? "").filter((specifier) => !specifier.startsWith("node:"));
}

/** Every package the files of src/ loaded at start import statically. */
function packagesAtStart(entry: string): Set<string> {
  const packages = new Set<string>();
  for (const file of loadedAtStart(entry)) for (const name of staticPackages(readFileSync(path.join(sourceRoot, file), "utf8"))) packages.add(name);
  return packages;
}

/** Every file of src/ that loading `entry` loads before any command runs. */
function loadedAtStart(entry: string): Set<string> {
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const specifier of staticSpecifiers(readFileSync(file, "utf8"))) {
      const target = path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts"));
      if (existsSync(target)) visit(target);
    }
  };
  visit(entry);
  return new Set([...seen].map((file) => path.relative(sourceRoot, file)));
}

/**
 * Every `llmgw ctl` call builds the whole command tree. Loading the server,
 * the demo, the agent, the gateway or an engine to do it doubled the time of
 * each ctl call (1.2 s against 0.6 s for `ctl --help` here): those commands
 * import their implementation when they run.
 */
describe("the CLI's start", () => {
  it("loads no server, demo, agent, gateway or engine code to build the command tree", () => {
    // main.ts loads ctl's branch statically and the processes' commands (for any other command line) by import().
    const loaded = [...loadedAtStart(path.join(sourceRoot, "cli/main.ts")), ...loadedAtStart(path.join(sourceRoot, "cli/process-commands.ts"))];
    const heavy = loaded.filter((file) => /^(server\/start-server|server\/build-app|demo\/|agent\/|gateway\/|engines\/|store\/|reconcile\/)/.test(file));
    expect(heavy).toEqual([]);
    // The walk itself reaches the command modules, so an empty list above means something.
    expect(loaded).toEqual(expect.arrayContaining(["cli/program-root.ts", "cli/demo-command.ts", "cli/server-command.ts", "cli/ctl/context.ts"]));
  });

  it("loads none of the processes' command modules for a ctl command line", () => {
    const loaded = [...loadedAtStart(path.join(sourceRoot, "cli/main.ts"))];
    expect(loaded).toContain("cli/ctl-branch.ts");
    expect(loaded.filter((file) => /^cli\/(process-commands|demo-command|server-command|agent-command|gateway-command|sim-engine-command|llama-engine-command|completion\/|service\/)/.test(file))).toEqual([]);
  });

  it("loads only the packages a ctl call to the server needs: no schema library, YAML parser, model-file readers or HTTP library", () => {
    // Each of these cost 0.1 to 0.3 s of every ctl call's start on a 2-core machine; the commands that need them import them when they run.
    // undici among them: ctl speaks the global fetch, and loads undici only for a private CA or a stream with no time limit.
    expect([...packagesAtStart(path.join(sourceRoot, "cli/main.ts"))].sort()).toEqual(["commander"]);
  });
});
