import {
  notMultiNode,
  resolveProfiles,
  type CatalogModel,
  type ResolvedProfile,
  profilePosition,
  gpuOnlyEngines,
  maxNodesPerReplica,
  multiNodeEngines,
  singleCardEngines,
  type ModelEntry,
} from "../catalog/index.js";
import { DomainError } from "../errors/light.js";
import type { Fleet } from "../fleet/index.js";
import { type ModelFacts, splitsHeads, splitsHeadsReason } from "../plan/index.js";
import { cardShortfall, profileCardGroups } from "./card-shortfall.js";

export interface GpusChange {
  readonly model: CatalogModel;
  /** The profile to change; the model's first when undefined. */
  readonly profile: string | undefined;
  /** Cards per node. */
  readonly gpus: number;
  /** Nodes per replica to set with the cards; the profile's own count when undefined. */
  readonly nodes?: number | undefined;
  /** The planner's facts of the profile's source; undefined only for engines the planner does not model (ComfyUI). */
  readonly facts: ModelFacts | undefined;
  readonly fleet: Fleet;
  readonly gpuMemoryUtilization: number;
}

/**
 * The entry a change of cards per replica produces, or why it is refused:
 * an engine that runs on one card; a count no node of the profile's class
 * has on one fabric (for a replica over several nodes: no fabric with that
 * many nodes of those cards); for tensor parallel engines, a count that does
 * not split the attention heads (the planner's one rule, splitsHeads); cards
 * that would not hold the weights and the model's context (the planner's
 * figures) — naming the node count that would, when another would.
 * llama.cpp splits layers, which any count can.
 */
export function checkGpusChange(change: GpusChange): { entry: ModelEntry; profile: string } {
  const { model, gpus } = change;
  const entry = model.entry;
  const profiles = entry.profiles ?? [];
  const index = profilePosition(entry, change.profile, "cards");
  const nodesAsked = change.nodes;
  const after: ModelEntry = {
    ...entry,
    profiles: profiles.map((profile, position) => (position === index ? { ...profile, gpus, ...(nodesAsked !== undefined ? { nodes: nodesAsked } : {}) } : profile)),
  };
  const profile = resolveProfiles(after.profiles ?? [])[index];
  if (profile === undefined) throw new Error("a profile found by index vanished");
  const where = `${model.name}/${profile.name}`;

  if (singleCardEngines.includes(profile.engine) && gpus > 1) {
    throw new DomainError("invalid_profile", `${where} runs ${profile.engine}, which uses one card: it cannot take ${gpus}`, `Keep it at 1 card (0 for CPU); to serve more, add replicas with \`llmgw ctl scale ${model.name} --min N\`.`);
  }
  if (gpuOnlyEngines.includes(profile.engine) && gpus < 1) {
    throw new DomainError("invalid_profile", `${where} runs ${profile.engine}, which runs on GPUs only: it needs 1 or more cards`, "Give a count of 1 or more; to run on CPUs, add a llama.cpp profile with a GGUF source.");
  }
  if (profile.nodes > 1 && !multiNodeEngines.includes(profile.engine)) {
    throw new DomainError("invalid_profile", `${where} cannot span ${profile.nodes} nodes: ${notMultiNode(profile.engine)}`, `Keep --nodes at 1 for ${profile.engine}.`);
  }
  if (gpus === 0) return { entry: after, profile: profile.name };
  const largest = profile.nodes > 1 ? checkGangCards(change, profile, profile.nodes) : checkOneNodeCards(change, profile);

  const facts = change.facts;
  if (facts && profile.engine !== "llamacpp") {
    const { attentionHeads, kvHeads } = facts.architecture;
    // vLLM splits each node's cards (pipeline stages across nodes); SGLang makes one tensor group of every card.
    const tensorOf = (count: number) => (profile.engine === "vllm" ? count : count * profile.nodes);
    const reason = splitsHeadsReason(tensorOf(gpus), attentionHeads, kvHeads);
    if (reason !== undefined) {
      const dividing = Array.from({ length: largest }, (_unused, position) => position + 1).filter((count) => splitsHeads(tensorOf(count), attentionHeads, kvHeads));
      throw new DomainError(
        "heads_not_divisible",
        `${profile.engine} cannot split ${model.name} over ${tensorOf(gpus)} cards: ${reason} (it has ${attentionHeads} attention heads and ${kvHeads} KV heads)`,
        `Tensor parallel needs a count that divides both; on these nodes that is ${dividing.join(", ")}${profile.nodes > 1 ? " per node" : ""}.`,
      );
    }
  }
  const shortfall = facts ? cardShortfall(facts, profile, entry.context, change.fleet, change.gpuMemoryUtilization) : undefined;
  if (shortfall !== undefined) {
    const more = facts ? nodesThatHold(facts, profile, entry.context, change) : undefined;
    const command = (nodes: number) => `\`llmgw ctl model gpus ${model.name} ${gpus}${change.profile !== undefined ? ` --profile ${change.profile}` : ""} --nodes ${nodes}\``;
    throw new DomainError(
      "does_not_fit",
      `${gpus} ${gpus === 1 ? "card" : "cards"}${profile.nodes > 1 ? ` on each of ${profile.nodes} nodes` : " per replica"} would not hold ${where}${entry.context !== undefined ? ` at its ${entry.context}-token context` : ""}: ${shortfall}`,
      more !== undefined
        ? `It would fit ${more} nodes of ${gpus} cards: ${command(more)} changes both.`
        : `Give it more cards, a shorter context (\`llmgw ctl model context ${model.name} N\`), or plan it with \`llmgw ctl model plan ${profile.source}\`.`,
    );
  }
  return { entry: after, profile: profile.name };
}

/** A replica on one node: some node of the class must have the cards on one fabric. Returns the most cards one node has. */
function checkOneNodeCards(change: GpusChange, profile: ResolvedProfile): number {
  const gpus = change.gpus;
  const where = `${change.model.name}/${profile.name}`;
  const className = profile.gpu_class ?? "GPU";
  const groups = profileCardGroups(change.fleet, profile.gpu_class);
  if (groups.length === 0) {
    throw new DomainError("cards_missing", `no node of the fleet has ${className} cards, so ${where} cannot be checked or placed on ${gpus}`, "Join a node with those cards (`llmgw ctl nodes` lists what has joined), or change the profile's gpu_class.");
  }
  const largest = groups.reduce((best, group) => (group.cards > best.cards ? group : best));
  if (largest.cards < gpus) {
    throw new DomainError(
      "cards_missing",
      `no node has ${gpus} ${className} cards on one fabric for ${where}: the largest, ${largest.node}, has ${largest.cards} (${largest.cardClass} on ${largest.fabric})`,
      `Ask for ${largest.cards} or fewer: a replica never spans two nodes or two fabrics unless it is given several nodes (--nodes N, vLLM and SGLang).`,
    );
  }
  return largest.cards;
}

/** Nodes of the profile's class with `gpus` cards, counted per class and fabric. */
function gangGroups(fleet: Fleet, profile: ResolvedProfile, gpus: number): Map<string, number> {
  const byFabric = new Map<string, number>();
  for (const group of profileCardGroups(fleet, profile.gpu_class)) {
    if (group.cards < gpus) continue;
    const key = `${group.cardClass} on ${group.fabric}`;
    byFabric.set(key, (byFabric.get(key) ?? 0) + 1);
  }
  return byFabric;
}

/** A replica over several nodes: one fabric must have that many nodes of the class, each with the cards. Returns the cards asked. */
function checkGangCards(change: GpusChange, profile: ResolvedProfile, nodes: number): number {
  const counts = [...gangGroups(change.fleet, profile, change.gpus).entries()].sort((a, b) => b[1] - a[1]);
  const best = counts[0];
  if (best === undefined || best[1] < nodes) {
    throw new DomainError(
      "cards_missing",
      `no fabric has ${nodes} nodes with ${change.gpus} ${profile.gpu_class ?? "GPU"} cards each for ${change.model.name}/${profile.name}${best ? `: the most is ${best[1]} (${best[0]})` : ""}`,
      "A replica over several nodes takes alike nodes of one fabric; join more, or ask for fewer nodes (--nodes) or cards.",
    );
  }
  return change.gpus;
}

/** The fewest nodes beyond the profile's own, on what one fabric offers, at which its cards would hold the model. */
function nodesThatHold(facts: ModelFacts, profile: ResolvedProfile, context: number | undefined, change: GpusChange): number | undefined {
  if (!multiNodeEngines.includes(profile.engine)) return undefined;
  const most = Math.max(0, ...gangGroups(change.fleet, profile, change.gpus).values());
  for (let nodes = profile.nodes + 1; nodes <= Math.min(most, maxNodesPerReplica); nodes += 1) {
    if (cardShortfall(facts, { ...profile, nodes }, context, change.fleet, change.gpuMemoryUtilization) === undefined) return nodes;
  }
  return undefined;
}
