import { readFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { redactUrl } from "../catalog/redact.js";
import type { ModelEntry } from "../catalog/schema.js";
import { describeSource, parseWeightsSource, type WeightsSource } from "../catalog/weights-source.js";
import { DomainError } from "../errors/domain-error.js";
import { withUrlCredentials } from "../net/url-credentials.js";
import { connectionFailure, connectionHint, fetchWithin } from "./model-files.js";

/**
 * A mirror folder written by `llmgw ctl mirror pull`: hub repositories'
 * files under hf/ORG/NAME/REVISION/, a `FILE.sha256` beside each file (the
 * form every mirror reader already checks), and this manifest at the root
 * naming which hub source each folder or file stands for. A server whose
 * `mirror:` holds a manifest reads a preset's hub sources from the mirror,
 * and never asks the hub for them: an air-gapped cluster adds presets as a
 * connected one does.
 */
export const mirrorManifestName = "llmgw-mirror.json";

const sha256Pattern = /^[0-9a-f]{64}$/;

export const mirrorManifestSchema = z.strictObject({
  format: z.literal(1),
  sources: z.record(
    z.string(),
    z.strictObject({
      /** The same source inside the mirror: `mirror:hf/ORG/NAME/REVISION/[PATH]`. */
      mirror_source: z.string().startsWith("mirror:"),
      /** The commit the revision stood for when it was pulled. */
      commit: z.string(),
      pulled_at: z.string(),
      files: z.array(z.strictObject({ path: z.string().min(1), bytes: z.number().int().nonnegative(), sha256: z.string().regex(sha256Pattern, { message: "a sha256, 64 lowercase hex digits" }) })),
    }),
  ),
});
export type MirrorManifest = z.infer<typeof mirrorManifestSchema>;
export type MirroredSource = MirrorManifest["sources"][string];

/** The key a hub source is listed under, whichever way it was written (hf://org/name, org/name@main): undefined for any other kind. */
export function mirrorKey(source: string): string | undefined {
  let parsed: WeightsSource;
  try {
    parsed = parseWeightsSource(source.trim());
  } catch {
    return undefined;
  }
  return parsed.kind === "hub" ? describeSource(parsed) : undefined;
}

/** Where a hub source's files go inside the mirror: hf/ORG/NAME/REVISION/ then its path (a repository is a folder, ending in /). */
export function hubMirrorPath(source: Extract<WeightsSource, { kind: "hub" }>): string {
  const folder = `hf/${source.repo}/${source.revision}/`;
  return source.path === "" ? folder : `${folder}${source.path}`;
}

/** The mirror's copy of a source when the manifest lists it; the source as written otherwise. */
export function mirroredSource(source: string, manifest: MirrorManifest | undefined): string {
  if (!manifest) return source;
  const key = mirrorKey(source);
  return (key !== undefined ? manifest.sources[key]?.mirror_source : undefined) ?? source;
}

/**
 * A model entry with every source the mirror holds replaced by its
 * `mirror:` copy: the stored model then names the mirror, so the source
 * check, the planner, model changes and the agents all read the mirror.
 */
export function entryFromMirror(entry: ModelEntry, manifest: MirrorManifest | undefined): ModelEntry {
  if (!manifest) return entry;
  const from = (source: string) => mirroredSource(source, manifest);
  return {
    ...entry,
    ...(entry.origin !== undefined ? { origin: from(entry.origin) } : {}),
    ...(entry.profiles
      ? {
          profiles: entry.profiles.map((profile) => ({
            ...profile,
            source: from(profile.source),
            ...(profile.comfy ? { comfy: { ...profile.comfy, ...(profile.comfy.files ? { files: profile.comfy.files.map((file) => ({ ...file, source: from(file.source) })) } : {}) } } : {}),
          })),
        }
      : {}),
    ...(entry.adapters ? { adapters: entry.adapters.map((adapter) => ({ ...adapter, source: from(adapter.source) })) } : {}),
  };
}

function malformed(where: string, why: string): DomainError {
  return new DomainError(
    "mirror_manifest_invalid",
    `${where} ${why}`,
    "Write the mirror again with `llmgw ctl mirror pull PRESET|SOURCE --to DIR`, or remove the file to serve the mirror without it (hub sources then go to the hub).",
  );
}

/** The manifest's text checked, or a refusal naming the file and the field. */
export function parseMirrorManifest(text: string, where: string): MirrorManifest {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw malformed(where, "is not JSON");
  }
  const parsed = mirrorManifestSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw malformed(where, `is not a mirror manifest: ${issue ? `${issue.path.join(".") || "(root)"}: ${issue.message}` : "unknown shape"}`);
  }
  return parsed.data;
}

/**
 * The manifest of `mirror` (server.yaml's: a folder or an http(s) URL), or
 * undefined when the mirror publishes none (a mirror written by hand). A
 * mirror that cannot be reached, or a manifest that is not one, is an error
 * rather than "none": quietly falling back to the hub would, on an
 * air-gapped cluster, turn a mirror outage into a stream of hub timeouts.
 */
export async function readMirrorManifest(mirror: string, timeoutMs?: number): Promise<MirrorManifest | undefined> {
  if (!/^https?:\/\//i.test(mirror)) {
    const file = path.join(path.resolve(mirror), mirrorManifestName);
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new DomainError("source_unreadable", `cannot read the mirror's manifest ${file}: ${(error as Error).message}`, "Check that the mirror folder is mounted and readable by the server.");
    }
    return parseMirrorManifest(text, file);
  }
  const url = new URL(mirrorManifestName, mirror.endsWith("/") ? mirror : `${mirror}/`).toString();
  const target = withUrlCredentials(url, {});
  let response: Response;
  try {
    response = await fetchWithin(timeoutMs)(target.url, { headers: target.headers });
  } catch (error) {
    throw new DomainError("source_unreadable", `cannot read the mirror's manifest ${redactUrl(url)}: ${connectionFailure(error, timeoutMs)}`, connectionHint(error, "the mirror"));
  }
  // A bucket answers 403 or 410 for a key it does not hold, as for a missing .sha256.
  if ([404, 403, 410].includes(response.status)) return undefined;
  if (!response.ok) throw new DomainError("source_unreadable", `cannot read the mirror's manifest ${redactUrl(url)}: the mirror answered ${response.status}`, "Check the mirror URL in server.yaml.");
  return parseMirrorManifest(await response.text(), redactUrl(url));
}
