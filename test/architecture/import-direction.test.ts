import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * Which folders of src/ each folder may import. Arrows point one way: the
 * pure decisions (catalog, plan, fleet, placement) never reach up into the
 * database, the HTTP servers or the process that wires them; the contracts in
 * protocol/ sit under every side that speaks them; the agent and the gateway
 * run without the control plane's internals. A folder missing from this table
 * fails the test, so a new folder takes its place on purpose.
 */
const mayImport: Readonly<Record<string, readonly string[]>> = {
  errors: [],
  files: [],
  // The stand-in hub (for the demo and for the tests of every hub reader) is a small fastify server of its own.
  hub: [],
  net: ["errors"],
  auth: ["errors"],
  catalog: ["errors", "net"],
  protocol: ["catalog", "errors"],
  fleet: ["catalog", "protocol", "errors", "net"],
  plan: ["catalog", "fleet", "protocol", "errors", "net"],
  placement: ["catalog", "plan", "fleet", "protocol", "errors", "net"],
  engines: ["catalog", "fleet", "protocol", "errors", "net"],
  store: ["catalog", "protocol", "errors", "net"],
  reconcile: ["catalog", "plan", "fleet", "protocol", "placement", "store", "engines", "errors", "net"],
  http: ["catalog", "protocol", "errors"],
  agent: ["catalog", "plan", "fleet", "protocol", "engines", "auth", "http", "files", "errors", "net"],
  gateway: ["catalog", "protocol", "engines", "auth", "http", "errors", "net"],
  services: ["catalog", "plan", "fleet", "protocol", "placement", "reconcile", "engines", "store", "auth", "errors", "net"],
  api: ["services", "reconcile", "catalog", "plan", "fleet", "protocol", "store", "auth", "http", "errors", "net"],
  // The admin API's HTTP client, for the CLI's ctl and for the demo: it speaks the contracts only.
  client: ["protocol", "errors", "net"],
  server: ["api", "services", "gateway", "reconcile", "placement", "store", "engines", "catalog", "plan", "fleet", "protocol", "auth", "http", "files", "errors", "net"],
  demo: ["server", "agent", "client", "hub", "api", "services", "gateway", "reconcile", "placement", "store", "engines", "catalog", "plan", "fleet", "protocol", "auth", "http", "files", "errors", "net"],
  cli: ["server", "agent", "demo", "client", "api", "services", "gateway", "reconcile", "placement", "store", "engines", "catalog", "plan", "fleet", "protocol", "auth", "http", "files", "errors", "net"],
};

/**
 * Each folder is entered through its face, src/<folder>/index.ts: what other
 * folders may use, in one file, so a folder can rearrange its inside without
 * touching its callers. A few folders have a second, light face as well: the
 * CLI builds its whole command tree at every `llmgw ctl` call, and the main
 * face of these folders loads the schema library, the YAML parser, the
 * spelling suggester or the server; their light face re-exports only what that start needs (the CLI's
 * start test holds it to that). The processes started most often have narrow
 * faces too, for the same reason: the engines (started for every replica, by the
 * demo and by most tests) enter engines/ through sim-process.ts or
 * llama-process.ts and take catalog, errors, fleet and protocol through their
 * for-engines.ts; the agent (and http/, which serves its control API) takes them
 * through for-agent.ts. A face file loads every module it re-exports, so one
 * face for everyone would load the whole folder into each of them. Subfolders (catalog/presets, engines/drivers,
 * gateway/front) are the inside of their folder: another folder reaches them
 * through the folder's face, and files of the same folder import them
 * directly.
 */
const secondFaces: Readonly<Record<string, readonly string[]>> = {
  errors: ["light.ts", "for-engines.ts", "for-agent.ts"],
  catalog: ["light.ts", "for-engines.ts", "for-agent.ts"],
  plan: ["light.ts"],
  protocol: ["light.ts", "for-engines.ts", "for-agent.ts"],
  server: ["light.ts"],
  net: ["light.ts"],
  fleet: ["for-engines.ts", "for-agent.ts"],
  engines: ["sim-process.ts", "llama-process.ts"],
};

/**
 * The gateway's subfolders, lowest first: a subfolder imports only those
 * before it. The wire formats (bodies, error answers, refusals) sit under
 * everything and import nothing above them; the policies, routing, metrics
 * and upstream pools sit under the request path; process/ (one process, or a
 * primary and its workers and the channel between them) is the top.
 */
const gatewayLayers: readonly string[] = ["wire", "policy", "routing", "metrics", "upstream", "comfy", "request", "translate", "front", "process"];

const sourceRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../src");

/** Production code only: a test may build a whole server to check a route, and fixtures for tests live in testing/ folders. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === "testing" || entry.name === "fixtures" ? [] : sourceFiles(full);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [full] : [];
  });
}

/** Every relative specifier of static imports, re-exports and dynamic imports. */
export function relativeSpecifiers(text: string): string[] {
  const pattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)["'](\.{1,2}\/[^"']+)["']/gm;
  return [...text.matchAll(pattern)].map((match) => match[1] ?? "");
}

/** The folder of src/ a file belongs to; files at the root of src/ (package-root.ts) belong to no folder and anyone may use them. */
function folderOf(file: string): string | undefined {
  const parts = path.relative(sourceRoot, file).split(path.sep);
  return parts.length > 1 ? parts[0] : undefined;
}

interface WrongImport {
  readonly file: string;
  readonly imports: string;
}

function wrongImports(): { wrong: WrongImport[]; unknownFolders: string[] } {
  const wrong: WrongImport[] = [];
  const unknownFolders = new Set<string>();
  for (const file of sourceFiles(sourceRoot)) {
    const from = folderOf(file);
    if (from === undefined) continue;
    const allowed = mayImport[from];
    if (allowed === undefined) {
      unknownFolders.add(from);
      continue;
    }
    for (const specifier of relativeSpecifiers(readFileSync(file, "utf8"))) {
      const target = path.resolve(path.dirname(file), specifier);
      const to = folderOf(target);
      if (to === undefined || to === from || allowed.includes(to)) continue;
      wrong.push({ file: path.relative(sourceRoot, file), imports: path.relative(sourceRoot, target) });
    }
  }
  return { wrong, unknownFolders: [...unknownFolders] };
}

/** The faces of a folder, as paths relative to src/ with the .ts a specifier's .js stands for. */
function facesOf(folder: string): string[] {
  return ["index.ts", ...(secondFaces[folder] ?? [])].map((face) => `${folder}/${face}`);
}

/** Imports from another folder that pass its face by. */
function deepImports(): string[] {
  const wrong: string[] = [];
  for (const file of sourceFiles(sourceRoot)) {
    const from = folderOf(file);
    for (const specifier of relativeSpecifiers(readFileSync(file, "utf8"))) {
      const target = path.resolve(path.dirname(file), specifier);
      const to = folderOf(target);
      if (to === undefined || to === from) continue;
      const imported = path.relative(sourceRoot, target).replace(/\.js$/, ".ts");
      const faces = facesOf(to);
      if (faces.includes(imported)) continue;
      const face = path.relative(path.dirname(file), path.join(sourceRoot, to, "index.js"));
      wrong.push(`${path.relative(sourceRoot, file)} imports "${specifier}": import it from "${face}", the face of ${to}/ (export it there if ${to}/ does not yet)`);
    }
  }
  return wrong;
}

/** Imports between the gateway's subfolders that point up its layers, and subfolders the layers leave out. */
function gatewayLayerBreaks(): string[] {
  const gateway = path.join(sourceRoot, "gateway");
  const layerOf = (file: string): string | undefined => {
    const parts = path.relative(gateway, file).split(path.sep);
    return parts.length > 1 && !parts[0]?.startsWith("..") ? parts[0] : undefined;
  };
  const wrong = new Set<string>();
  for (const file of sourceFiles(gateway)) {
    const from = layerOf(file);
    if (from === undefined) continue;
    const fromRank = gatewayLayers.indexOf(from);
    if (fromRank < 0) {
      wrong.add(`gateway/${from}/ is not among the gateway's layers: place it in gatewayLayers`);
      continue;
    }
    for (const specifier of relativeSpecifiers(readFileSync(file, "utf8"))) {
      const to = layerOf(path.resolve(path.dirname(file), specifier));
      if (to === undefined || to === from) continue;
      if (gatewayLayers.indexOf(to) > fromRank) wrong.add(`${path.relative(sourceRoot, file)} imports "${specifier}": gateway/${from}/ sits below gateway/${to}/ and may not import it`);
    }
  }
  return [...wrong];
}

/**
 * The import circles of a graph of files, each as the path around it
 * ("a -> b -> a"): one per strongly connected group (Tarjan), so a knot of
 * many files is named once, by one loop through it.
 */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop() as string;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || (graph.get(node) ?? []).includes(node)) groups.push(group);
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return groups.map((group) => loopThrough(graph, new Set(group), [...group].sort()[0] as string));
}

/** A shortest way from start back to itself inside its group (breadth first), for the failure message. */
function loopThrough(graph: ReadonlyMap<string, readonly string[]>, group: ReadonlySet<string>, start: string): string[] {
  const cameFrom = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift() as string;
    for (const next of graph.get(node) ?? []) {
      if (!group.has(next)) continue;
      if (next === start) {
        const path = [start];
        for (let at = node; at !== start; at = cameFrom.get(at) as string) path.splice(1, 0, at);
        return [...path, start];
      }
      if (!cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  return [start, start];
}

/** Production files of src/ and the files each imports (a specifier's .js is its .ts source). */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(sourceRoot)) {
    const targets = relativeSpecifiers(readFileSync(file, "utf8")).map((specifier) =>
      path.relative(sourceRoot, path.resolve(path.dirname(file), specifier)).replace(/\.js$/, ".ts"),
    );
    graph.set(path.relative(sourceRoot, file), [...new Set(targets)]);
  }
  return graph;
}

describe("import direction", () => {
  it("finds the import specifiers it checks", () => {
    const text = 'import { a } from "../catalog/a.js";\nexport { b } from "./b.js";\nimport "../side/effect.js";\nconst c = await import("../../store/c.js");\nimport { d } from "zod";';
    expect(relativeSpecifiers(text)).toEqual(["../catalog/a.js", "./b.js", "../side/effect.js", "../../store/c.js"]);
  });

  it("places every folder of src/ in the table", () => {
    expect(wrongImports().unknownFolders).toEqual([]);
  });

  it("has no import pointing up or sideways across folders", () => {
    const { wrong } = wrongImports();
    expect(wrong.map((entry) => `${entry.file} imports ${entry.imports}`)).toEqual([]);
  });

  it("gives every folder of src/ a face, index.ts", () => {
    const folders = readdirSync(sourceRoot, { withFileTypes: true }).filter((entry) => entry.isDirectory());
    const faceless = folders.flatMap((entry) => facesOf(entry.name).filter((face) => !existsSync(path.join(sourceRoot, face))));
    expect(faceless).toEqual([]);
  });

  it("enters every other folder through its face", () => {
    expect(deepImports()).toEqual([]);
  });

  it("keeps the gateway's subfolders in their layers", () => {
    expect(gatewayLayerBreaks()).toEqual([]);
  });

  it("keeps the table itself one way: no two folders may import each other", () => {
    const cycles = Object.entries(mayImport).flatMap(([from, targets]) => targets.filter((to) => mayImport[to]?.includes(from)).map((to) => `${from} <-> ${to}`));
    expect(cycles).toEqual([]);
  });

  it("finds an import circle, named by the path around it", () => {
    const graph = new Map<string, string[]>([
      ["a.ts", ["b.ts", "d.ts"]],
      ["b.ts", ["c.ts"]],
      ["c.ts", ["a.ts"]],
      ["d.ts", []],
      ["e.ts", ["e.ts"]],
    ]);
    expect(findCycles(graph)).toEqual([["a.ts", "b.ts", "c.ts", "a.ts"], ["e.ts", "e.ts"]]);
    expect(findCycles(new Map([["a.ts", ["b.ts"]], ["b.ts", []]]))).toEqual([]);
  });

  it("has no import circle between files of src/", () => {
    expect(findCycles(importGraph()).map((cycle) => `import circle: ${cycle.join(" -> ")}`)).toEqual([]);
  });
});
