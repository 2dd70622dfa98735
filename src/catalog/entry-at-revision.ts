import { DomainError } from "../errors/light.js";
import type { ModelEntry } from "./schema.js";
import { parseWeightsSource, type WeightsSource } from "./weights-source.js";

type HubSource = Extract<WeightsSource, { kind: "hub" }>;

function hubSource(source: string): HubSource | undefined {
  try {
    const parsed = parseWeightsSource(source);
    return parsed.kind === "hub" ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** A hub source written back in the form it came in (hf://… or org/name), at another revision. */
function withHubRevision(source: string, parsed: HubSource, revision: string): string {
  if (source.startsWith("hf://")) return `hf://${parsed.repo}@${revision}${parsed.path ? `/${parsed.path}` : ""}`;
  return `${parsed.repo}@${revision}`;
}

/**
 * The hub repository whose revisions a model follows: its `origin` when that
 * is a hub source, else the one hub repository all its profiles load from.
 * Undefined when there is none (URLs, paths, profiles from several repos):
 * such a model has no revision to move to.
 */
export function revisionedRepo(entry: ModelEntry): HubSource | undefined {
  if (entry.origin !== undefined) return hubSource(entry.origin);
  const repos = (entry.profiles ?? []).map((profile) => hubSource(profile.source));
  const first = repos[0];
  if (first === undefined || repos.some((repo) => repo === undefined || repo.repo !== first.repo)) return undefined;
  return first;
}

/**
 * The same model at another revision of its repository: the origin and every
 * profile that loads from that repository move together, so the planner, the
 * source check and the agents all read the new revision. Profiles loading
 * from another place (a GGUF conversion in its own repository, a path) are
 * left as they are: their revisions are not this repository's.
 */
export function entryAtRevision(entry: ModelEntry, revision: string): ModelEntry {
  const repo = revisionedRepo(entry);
  if (repo === undefined) {
    throw new DomainError(
      "invalid_input",
      `${entry.name} does not follow a hub repository, so it has no revision ${revision} to move to`,
      "Set its origin to hf://org/name (ctl model origin), or change the profiles' sources themselves.",
    );
  }
  const origin = entry.origin === undefined ? undefined : withHubRevision(entry.origin, repo, revision);
  const profiles = entry.profiles?.map((profile) => {
    const parsed = hubSource(profile.source);
    return parsed?.repo === repo.repo ? { ...profile, source: withHubRevision(profile.source, parsed, revision) } : profile;
  });
  return { ...entry, ...(origin === undefined ? {} : { origin }), ...(profiles === undefined ? {} : { profiles }) };
}
