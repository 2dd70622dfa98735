import { parseWeightsSource } from "../weights-source.js";
import type { Preset } from "./preset-schema.js";

/** The repository a source names on the hub, in lower case (the hub's names are case-blind), or undefined for any other source. */
function hubRepository(source: string): string | undefined {
  try {
    const parsed = parseWeightsSource(source.trim());
    return parsed.kind === "hub" ? parsed.repo.toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The ComfyUI preset a source belongs to (its origin, its profile's source,
 * or one of its workflow's files), or undefined. Such a model is a workflow
 * and several files, not one checkpoint to plan, so `ctl model serve` of its
 * repository must point at the preset instead of failing to find a
 * config.json there. Pure.
 */
export function comfyPresetForSource(source: string, presets: readonly Preset[]): Preset | undefined {
  const repository = hubRepository(source);
  if (repository === undefined) return undefined;
  return presets.find((preset) => {
    const comfyProfiles = (preset.model.profiles ?? []).filter((profile) => profile.engine === "comfyui");
    if (comfyProfiles.length === 0) return false;
    const named = [preset.model.origin, ...comfyProfiles.flatMap((profile) => [profile.source, ...(profile.comfy?.files ?? []).map((file) => file.source)])];
    return named.some((candidate) => candidate !== undefined && hubRepository(candidate) === repository);
  });
}
