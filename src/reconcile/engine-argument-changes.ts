import type { CatalogModel, ResolvedProfile } from "../catalog/index.js";
import { type EngineLaunchInput, driverFor } from "../engines/index.js";
import type { ArgumentChange, ProfileArgumentChanges } from "../protocol/index.js";

/**
 * The launch input a replica of `profile` would get, with placeholders where
 * only the node knows (weights path, port, card numbers): the same on both
 * sides of a comparison, so they never show as a change.
 */
function launchInput(model: CatalogModel, profile: ResolvedProfile, gpuMemoryUtilization: number, cards?: readonly number[]): EngineLaunchInput {
  return {
    modelName: model.name,
    weightsPath: "WEIGHTS",
    cards: cards ?? Array.from({ length: profile.gpus }, (_unused, index) => index),
    port: 8000,
    context: model.entry.context,
    slots: profile.slots,
    cpuCores: profile.cpu_cores,
    gpuMemoryUtilization,
    quantization: profile.quantization,
    adapters: (model.entry.adapters ?? []).map((adapter) => ({ name: adapter.name, path: adapter.name, ...(adapter.scale !== undefined ? { scale: adapter.scale } : {}) })),
    extraArgs: profile.args,
    extraEnv: profile.env,
    enginePath: "ENGINE",
  };
}

/**
 * The command line a replica of `profile` placed on `cards` would start
 * with, from the engine's own driver (weights path, port and engine binary
 * as placeholders: only the node knows them). Undefined when the driver
 * refuses the settings, which the catalog's own checks prevent.
 */
export function engineArgv(model: CatalogModel, profile: ResolvedProfile, gpuMemoryUtilization: number, cards: readonly number[]): readonly string[] | undefined {
  try {
    return driverFor(profile.engine).build(launchInput(model, profile, gpuMemoryUtilization, cards)).argv;
  } catch {
    return undefined;
  }
}

/**
 * Flags and their values, in the order the command line gives them. A token
 * starting with "--" is a flag; the tokens after it up to the next flag are
 * its value (so `--lora-modules a=x b=y` is one value). A repeated flag
 * (llama.cpp's --lora) keeps every value, joined by spaces.
 */
function flagValues(argv: readonly string[]): Map<string, string> {
  const flags = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const token of argv) {
    if (token.startsWith("--")) {
      const [flag, inline] = token.includes("=") ? [token.slice(0, token.indexOf("=")), token.slice(token.indexOf("=") + 1)] : [token, undefined];
      current = flags.get(flag) ?? [];
      flags.set(flag, current);
      if (inline !== undefined) current.push(inline);
    } else current?.push(token);
  }
  return new Map([...flags].map(([flag, values]) => [flag, values.join(" ")]));
}

/** Flags whose value differs between two command lines, in the order they appear (before's first, then those only after has). */
export function argumentChanges(before: readonly string[], after: readonly string[]): ArgumentChange[] {
  const old = flagValues(before);
  const next = flagValues(after);
  const flags = [...new Set([...old.keys(), ...next.keys()])];
  return flags
    .filter((flag) => old.get(flag) !== next.get(flag))
    .map((flag) => ({ flag, before: old.get(flag) ?? null, after: next.get(flag) ?? null }));
}

/**
 * Per profile of the model after a change, the engine arguments its replicas
 * start with that differ from before, computed with the same pure drivers
 * the agents run: what `ctl model context` and `ctl model gpus` print is what
 * the engines will be given. A profile whose driver refuses the settings
 * (which the catalog's own checks prevent) shows no change rather than failing
 * an answer about a change already made.
 */
export function engineArgumentChanges(before: CatalogModel, after: CatalogModel, gpuMemoryUtilization: number): ProfileArgumentChanges[] {
  const argv = (model: CatalogModel, profile: ResolvedProfile): readonly string[] => driverFor(profile.engine).build(launchInput(model, profile, gpuMemoryUtilization)).argv;
  return after.profiles.map((profile) => {
    const previous = before.profiles.find((candidate) => candidate.name === profile.name);
    let changes: ArgumentChange[] = [];
    try {
      if (previous) changes = argumentChanges(argv(before, previous), argv(after, profile));
    } catch {
      changes = [];
    }
    return { profile: profile.name, engine: profile.engine, arguments: changes };
  });
}
