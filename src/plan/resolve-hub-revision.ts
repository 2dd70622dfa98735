import { z } from "zod";
import { DomainError } from "../errors/light.js";
import { connectionFailure, defaultHubEndpoint, fetchWithin, serverHubSettings, sourceUnreadable, type HubOptions } from "./model-files.js";

// Lenient like every answer from outside: only the commit is read.
const revisionAnswerSchema = z.looseObject({ sha: z.string().regex(/^[0-9a-f]{7,64}$/) });

/**
 * The commit a revision (branch, tag or sha) of a hub repository stands for
 * now, from the hub's own API (GET /api/models/ORG/NAME/revision/REV), as
 * `huggingface_hub.model_info(revision=…)` reads it. A revision the hub does
 * not know is refused here, before any replica is asked to load it.
 */
export async function resolveHubRevision(repository: string, revision: string, options: HubOptions = {}): Promise<string> {
  const hubUrl = (options.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "");
  const settings = options.hubSettings ?? serverHubSettings;
  const where = `${repository}@${revision} via ${hubUrl}`;
  let response: Response;
  try {
    response = await fetchWithin(options.requestTimeoutMs)(`${hubUrl}/api/models/${repository}/revision/${encodeURIComponent(revision)}`, {
      headers: options.hubToken ? { authorization: `Bearer ${options.hubToken}` } : {},
    });
  } catch (error) {
    throw sourceUnreadable(where, connectionFailure(error, options.requestTimeoutMs), `Check the hub endpoint (${settings.endpoint}) and that it is reachable.`);
  }
  if (response.status === 404) {
    const repositoryMissing = response.headers.get("x-error-code") === "RepoNotFound";
    throw new DomainError(
      "revision_not_found",
      repositoryMissing ? `the hub at ${hubUrl} has no repository ${repository}` : `${repository} has no revision ${revision} on the hub at ${hubUrl}`,
      repositoryMissing ? "Check the model's origin (ctl model origin)." : `Give a branch, tag or commit of ${repository} that exists (its commits are listed on the hub).`,
    );
  }
  if (response.status === 401 || response.status === 403) {
    throw sourceUnreadable(where, `the hub answered ${response.status}`, `The repository is gated or private: set the hub token (${settings.token}) and accept its licence.`);
  }
  const text = await response.text();
  if (!response.ok) throw sourceUnreadable(where, `the hub answered ${response.status}: ${text.slice(0, 200)}`, `Check the hub endpoint (${settings.endpoint}).`);
  let parsed: z.ZodSafeParseResult<{ sha: string }>;
  try {
    parsed = revisionAnswerSchema.safeParse(JSON.parse(text));
  } catch {
    throw sourceUnreadable(where, "the hub's answer is not JSON", `Check that ${settings.endpoint} points at a Hugging Face hub or a mirror of its API.`);
  }
  if (!parsed.success) throw sourceUnreadable(where, "the hub's answer names no commit sha", `Check that ${settings.endpoint} points at a Hugging Face hub or a mirror of its API.`);
  return parsed.data.sha;
}
