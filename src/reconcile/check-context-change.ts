import { resolveProfiles, type CatalogModel, type ModelEntry } from "../catalog/index.js";
import { DomainError, type ErrorDetail } from "../errors/light.js";
import type { Fleet } from "../fleet/index.js";
import type { ModelFacts } from "../plan/index.js";
import { cardShortfall } from "./card-shortfall.js";

/** One profile's reason, folded into the message (the CLI does not print again a detail the message states). */
const only = (details: readonly ErrorDetail[]) => (details.length === 1 ? `: ${details[0]?.message ?? ""}` : "");

export interface ContextChange {
  readonly model: CatalogModel;
  /** Tokens one request may use from now on. */
  readonly tokens: number;
  /** llama.cpp's parallel slots, each holding a full context; unchanged when undefined. */
  readonly slots: number | undefined;
  /** The planner's facts of each profile's source, by source; a profile whose source is missing here is not checked (ComfyUI). */
  readonly facts: ReadonlyMap<string, ModelFacts>;
  readonly fleet: Fleet;
  readonly gpuMemoryUtilization: number;
}

/**
 * The entry a context change produces, or the reason it is refused: longer
 * than a profile's model was trained for (its config's max_position_embeddings
 * or GGUF context_length, with rope scaling), or more KV cache than the cards
 * it runs on hold beside the weights. Every profile must hold it: profiles are
 * alternatives, and a change that quietly made the preferred one unplaceable
 * would move the model to its fallback profile at the next restart.
 */
export function checkContextChange(change: ContextChange): ModelEntry {
  const { model, tokens, slots } = change;
  const entry = model.entry;
  if (entry.external) {
    throw new DomainError("invalid_profile", `${model.name} is an external model: its provider decides its context`, "Change the context of models with profiles.");
  }
  const profiles = entry.profiles ?? [];
  if (slots !== undefined && !profiles.some((profile) => profile.engine === "llamacpp")) {
    throw new DomainError(
      "invalid_input",
      `--slots applies to llama.cpp profiles, and ${model.name} has none (${model.profiles.map((profile) => `${profile.name}: ${profile.engine}`).join(", ")})`,
      "Leave --slots out: the other engines batch requests by themselves.",
    );
  }
  const after: ModelEntry = {
    ...entry,
    context: tokens,
    profiles: profiles.map((profile) => (slots !== undefined && profile.engine === "llamacpp" ? { ...profile, slots } : profile)),
  };
  const resolved = resolveProfiles(after.profiles ?? []);

  const tooLong: ErrorDetail[] = [];
  for (const profile of resolved) {
    const facts = change.facts.get(profile.source);
    if (facts && tokens > facts.architecture.trainedContext) {
      tooLong.push({ where: `profile ${profile.name}`, message: `${profile.source} was trained for ${facts.architecture.trainedContext} tokens (${facts.provenance.architecture})` });
    }
  }
  if (tooLong.length > 0) {
    const trained = Math.min(...resolved.map((profile) => change.facts.get(profile.source)?.architecture.trainedContext ?? Number.POSITIVE_INFINITY));
    throw new DomainError(
      "context_too_long",
      `${tokens} tokens is more than ${model.name} was trained for (${trained})${only(tooLong)}; nothing was changed`,
      `Ask for ${trained} tokens or fewer: past its trained context a model's answers degrade, and vLLM refuses to start.`,
      tooLong,
    );
  }

  const short: ErrorDetail[] = [];
  for (const profile of resolved) {
    const facts = change.facts.get(profile.source);
    const reason = facts ? cardShortfall(facts, profile, tokens, change.fleet, change.gpuMemoryUtilization) : undefined;
    if (reason !== undefined) short.push({ where: `profile ${profile.name}`, message: reason });
  }
  if (short.length > 0) {
    throw new DomainError(
      "does_not_fit",
      `a ${tokens}-token context${slots !== undefined ? ` with ${slots} slots` : ""} does not fit the cards ${model.name} runs on${only(short)}; nothing was changed`,
      `Ask for a shorter context (\`llmgw ctl model plan SOURCE --context N\` shows the largest that fits), fewer slots, or more cards per replica (\`llmgw ctl model gpus ${model.name} N\`, with --nodes N to spread a vLLM or SGLang replica over more nodes).`,
      short,
    );
  }
  return after;
}
