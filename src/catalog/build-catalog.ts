import { DomainError, type ErrorDetail, type ErrorCode, didYouMean } from "../errors/index.js";
import { checkEntry, resolveModel, type CatalogModel, type ModelSource } from "./catalog-model.js";
import type { ModelEntry } from "./schema.js";
import { formatPath } from "./schema-errors.js";

/** One entry and where it was written, so every problem can name its place. */
export interface PlacedEntry {
  readonly entry: ModelEntry;
  readonly source: ModelSource;
  /** "server.yaml:12:5 models[3]" for a declared model, "runtime model qwen" for a stored one. */
  readonly place: string;
  /** Finds the file position of a path inside this entry, for declared models. */
  readonly locate?: (path: readonly (string | number)[]) => string | undefined;
}

export interface Catalog {
  readonly models: readonly CatalogModel[];
  /** Every name a client may ask for (models, aliases, adapters) and the model that serves it. */
  readonly names: ReadonlyMap<string, string>;
}

interface Problem {
  readonly code: ErrorCode;
  readonly detail: ErrorDetail;
}

/**
 * Builds the whole catalog from every entry and checks it as one: one
 * namespace for model, alias and adapter names; fallbacks that exist and form
 * no cycle; every profile valid for its engine. Callers build the catalog
 * that a change would produce and write only when this returns, so a refused
 * change leaves nothing half-written.
 */
export function buildCatalog(entries: readonly PlacedEntry[]): Catalog {
  const problems: Problem[] = [];
  const where = (placed: PlacedEntry, path: (string | number)[]) => {
    const position = placed.locate?.(path);
    return [position, `${placed.place}${path.length ? `.${formatPath(path)}` : ""}`].filter(Boolean).join(": ");
  };

  const owners = new Map<string, { placed: PlacedEntry; what: string }>();
  const claim = (name: string, placed: PlacedEntry, what: string, path: (string | number)[]) => {
    const previous = owners.get(name);
    if (previous) {
      problems.push({
        code: "name_taken",
        detail: {
          where: where(placed, path),
          message: `"${name}" (${what}) is already the ${previous.what} of ${previous.placed.place}; names of models, aliases and adapters share one namespace`,
        },
      });
      return;
    }
    owners.set(name, { placed, what });
  };

  for (const placed of entries) {
    const { entry } = placed;
    for (const problem of checkEntry(entry)) {
      problems.push({ code: problem.code, detail: { where: where(placed, problem.path), message: problem.message } });
    }
    claim(entry.name, placed, "model name", ["name"]);
    for (const [index, alias] of (entry.aliases ?? []).entries()) claim(alias, placed, "alias", ["aliases", index]);
    for (const [index, adapter] of (entry.adapters ?? []).entries()) claim(adapter.name, placed, "adapter", ["adapters", index, "name"]);
  }

  const byName = new Map(entries.map((placed) => [placed.entry.name, placed]));
  for (const placed of entries) {
    for (const [index, fallback] of (placed.entry.fallbacks ?? []).entries()) {
      if (fallback === placed.entry.name) {
        problems.push({ code: "fallback_cycle", detail: { where: where(placed, ["fallbacks", index]), message: `"${fallback}" names the model itself` } });
      } else if (!byName.has(fallback)) {
        problems.push({
          code: "unknown_fallback",
          detail: { where: where(placed, ["fallbacks", index]), message: `"${fallback}" is not a model in the catalog${didYouMean(fallback, byName.keys())} (fallbacks name models, not aliases or adapters)` },
        });
      }
    }
  }
  for (const cycle of findFallbackCycles(entries)) {
    const first = byName.get(cycle[0] as string) as PlacedEntry;
    problems.push({
      code: "fallback_cycle",
      detail: { where: where(first, ["fallbacks"]), message: `fallbacks go round in a circle: ${[...cycle, cycle[0]].join(" → ")}` },
    });
  }

  if (problems.length > 0) {
    const first = problems[0] as Problem;
    const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})` : "";
    throw new DomainError(
      first.code,
      `${first.detail.where}: ${first.detail.message}${more}`,
      hintFor(first.code),
      problems.map((problem) => problem.detail),
    );
  }

  const models = entries.map((placed) => resolveModel(placed.entry, placed.source));
  const names = new Map<string, string>();
  for (const [name, owner] of owners) names.set(name, owner.placed.entry.name);
  return { models, names };
}

function hintFor(code: ErrorCode): string {
  switch (code) {
    case "name_taken":
      return "Choose a name no other model, alias or adapter uses (see `llmgw ctl models`); nothing was changed.";
    case "unknown_fallback":
      return "Name an existing model as the fallback, or add that model first; nothing was changed.";
    case "fallback_cycle":
      return "Break the circle: a model's fallbacks must not lead back to it; nothing was changed.";
    case "invalid_profile":
      return "Change the profile so its engine can run it (see the profile keys in docs/server-yaml.md); nothing was changed.";
    default:
      return "Correct the places listed; nothing was changed.";
  }
}

/** Each fallback cycle once, as the list of model names in order (self-loops are reported separately). */
function findFallbackCycles(entries: readonly PlacedEntry[]): string[][] {
  const edges = new Map(entries.map((placed) => [placed.entry.name, (placed.entry.fallbacks ?? []).filter((name) => name !== placed.entry.name)]));
  const state = new Map<string, "visiting" | "done">();
  const cycles: string[][] = [];
  const stack: string[] = [];
  const visit = (name: string) => {
    state.set(name, "visiting");
    stack.push(name);
    for (const next of edges.get(name) ?? []) {
      if (!edges.has(next)) continue;
      const nextState = state.get(next);
      if (nextState === "visiting") cycles.push(stack.slice(stack.indexOf(next)));
      else if (nextState === undefined) visit(next);
    }
    stack.pop();
    state.set(name, "done");
  };
  for (const name of edges.keys()) if (!state.has(name)) visit(name);
  return cycles;
}
