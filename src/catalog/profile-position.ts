import { DomainError } from "../errors/light.js";
import { resolveProfiles } from "./catalog-model.js";
import type { ModelEntry } from "./schema.js";

/**
 * Where in an entry's profiles a command acts. The named one; when none is
 * named, the model's one profile on cards. Never a guess: two profiles on
 * cards are refused (profile_ambiguous, listing them), and a profile on no
 * cards is taken unnamed only when it is the model's only profile and the
 * command does not set cards (moving a CPU profile onto cards is done only
 * when it is named). Refused (profile_not_found, listing the profiles there
 * are) when the model has no such profile, or none at all (an external
 * model, which has nothing to `set`: "resources", "cards").
 */
export function profilePosition(entry: ModelEntry, requested: string | undefined, set: string): number {
  const profiles = resolveProfiles(entry.profiles ?? []);
  const names = profiles.map((profile) => profile.name);
  if (names.length > 0 && requested !== undefined && names.includes(requested)) return names.indexOf(requested);
  if (names.length > 0 && requested === undefined) {
    const onCards = profiles.flatMap((profile, position) => (profile.gpus > 0 ? [position] : []));
    if (onCards.length === 1) return onCards[0] as number;
    if (onCards.length === 0 && names.length === 1 && set !== "cards") return 0;
    const choices = onCards.length > 1 ? onCards.map((position) => names[position] as string) : names;
    throw new DomainError(
      "profile_ambiguous",
      onCards.length > 1
        ? `model "${entry.name}" has ${onCards.length} profiles on cards (${choices.join(", ")}): which one's ${set} is not guessed`
        : `model "${entry.name}" runs on no cards (profiles ${choices.join(", ")}): a profile's ${set} change only when it is named`,
      `Name it: --profile ${choices[0]}${choices.length > 1 ? ` (or ${choices.slice(1).join(", ")})` : ""}.`,
    );
  }
  throw new DomainError(
    "profile_not_found",
    requested === undefined ? `model "${entry.name}" has no profiles (it is external)` : `model "${entry.name}" has no profile "${requested}"`,
    names.length > 0 ? `Its profiles are: ${names.join(", ")}.` : `External models run elsewhere; they have no ${set} to set.`,
  );
}
