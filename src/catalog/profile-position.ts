import { DomainError } from "../errors/domain-error.js";
import { resolveProfiles } from "./catalog-model.js";
import type { ModelEntry } from "./schema.js";

/**
 * Where in an entry's profiles a command acts: the named one, or the first
 * when none is named. Refused (profile_not_found, listing the profiles there
 * are) when the model has no such profile, or none at all (an external model,
 * which has nothing to `set`: "resources", "cards").
 */
export function profilePosition(entry: ModelEntry, requested: string | undefined, set: string): number {
  const names = resolveProfiles(entry.profiles ?? []).map((profile) => profile.name);
  const position = requested === undefined ? 0 : names.indexOf(requested);
  if (names.length > 0 && position >= 0) return position;
  throw new DomainError(
    "profile_not_found",
    requested === undefined ? `model "${entry.name}" has no profiles (it is external)` : `model "${entry.name}" has no profile "${requested}"`,
    names.length > 0 ? `Its profiles are: ${names.join(", ")}.` : `External models run elsewhere; they have no ${set} to set.`,
  );
}
