import { resolveProfiles, type CatalogModel } from "../catalog/catalog-model.js";
import { profilePosition } from "../catalog/profile-position.js";
import { gpuOnlyEngines, singleCardEngines, type ModelEntry } from "../catalog/schema.js";
import { DomainError } from "../errors/domain-error.js";
import type { Fleet } from "../fleet/pools.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { splitsHeads, splitsHeadsReason } from "../plan/splits-heads.js";
import { cardShortfall, profileCardGroups } from "./card-shortfall.js";

export interface GpusChange {
  readonly model: CatalogModel;
  /** The profile to change; the model's first when undefined. */
  readonly profile: string | undefined;
  readonly gpus: number;
  /** The planner's facts of the profile's source; undefined only for engines the planner does not model (ComfyUI). */
  readonly facts: ModelFacts | undefined;
  readonly fleet: Fleet;
  readonly gpuMemoryUtilization: number;
}

/**
 * The entry a change of cards per replica produces, or why it is refused:
 * an engine that runs on one card; a count no node of the profile's class
 * has on one fabric; for tensor parallel engines, a count that does not split
 * the attention heads (the planner's one rule, splitsHeads); cards that
 * would not hold the weights and the model's context (the planner's figures).
 * llama.cpp splits layers, which any count can.
 */
export function checkGpusChange(change: GpusChange): { entry: ModelEntry; profile: string } {
  const { model, gpus } = change;
  const entry = model.entry;
  const profiles = entry.profiles ?? [];
  const index = profilePosition(entry, change.profile, "cards");
  const after: ModelEntry = { ...entry, profiles: profiles.map((profile, position) => (position === index ? { ...profile, gpus } : profile)) };
  const profile = resolveProfiles(after.profiles ?? [])[index];
  if (profile === undefined) throw new Error("a profile found by index vanished");
  const where = `${model.name}/${profile.name}`;

  if (singleCardEngines.includes(profile.engine) && gpus > 1) {
    throw new DomainError("invalid_profile", `${where} runs ${profile.engine}, which uses one card: it cannot take ${gpus}`, `Keep it at 1 card (0 for CPU); to serve more, add replicas with \`llmgw ctl scale ${model.name} --min N\`.`);
  }
  if (gpuOnlyEngines.includes(profile.engine) && gpus < 1) {
    throw new DomainError("invalid_profile", `${where} runs ${profile.engine}, which runs on GPUs only: it needs 1 or more cards`, "Give a count of 1 or more; to run on CPUs, add a llama.cpp profile with a GGUF source.");
  }
  if (gpus === 0) return { entry: after, profile: profile.name };

  const groups = profileCardGroups(change.fleet, profile.gpu_class);
  const className = profile.gpu_class ?? "GPU";
  if (groups.length === 0) {
    throw new DomainError("cards_missing", `no node of the fleet has ${className} cards, so ${where} cannot be checked or placed on ${gpus}`, "Join a node with those cards (`llmgw ctl nodes` lists what has joined), or change the profile's gpu_class.");
  }
  const largest = groups.reduce((best, group) => (group.cards > best.cards ? group : best));
  if (largest.cards < gpus) {
    throw new DomainError(
      "cards_missing",
      `no node has ${gpus} ${className} cards on one fabric for ${where}: the largest, ${largest.node}, has ${largest.cards} (${largest.gpuClass} on ${largest.fabric})`,
      `Ask for ${largest.cards} or fewer: a replica never spans two nodes or two fabrics.`,
    );
  }

  const facts = change.facts;
  if (facts && profile.engine !== "llamacpp") {
    const { attentionHeads, kvHeads } = facts.architecture;
    const reason = splitsHeadsReason(gpus, attentionHeads, kvHeads);
    if (reason !== undefined) {
      const dividing = Array.from({ length: largest.cards }, (_unused, position) => position + 1).filter((count) => splitsHeads(count, attentionHeads, kvHeads));
      throw new DomainError(
        "heads_not_divisible",
        `${profile.engine} cannot split ${model.name} over ${gpus} cards: ${reason} (it has ${attentionHeads} attention heads and ${kvHeads} KV heads)`,
        `Tensor parallel needs a count that divides both; on these nodes that is ${dividing.join(", ")}.`,
      );
    }
  }
  const shortfall = facts ? cardShortfall(facts, profile, entry.context, change.fleet, change.gpuMemoryUtilization) : undefined;
  if (shortfall !== undefined) {
    throw new DomainError(
      "does_not_fit",
      `${gpus} ${gpus === 1 ? "card" : "cards"} per replica would not hold ${where}${entry.context !== undefined ? ` at its ${entry.context}-token context` : ""}: ${shortfall}`,
      `Give it more cards, a shorter context (\`llmgw ctl model context ${model.name} N\`), or plan it with \`llmgw ctl model plan ${profile.source}\`.`,
    );
  }
  return { entry: after, profile: profile.name };
}
