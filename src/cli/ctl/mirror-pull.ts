import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { parseGgufShardFilename } from "@huggingface/gguf";
import { listFiles } from "@huggingface/hub";
import { selectHubFiles } from "../../agent/weights-source.js";
import type { Preset } from "../../catalog/presets/preset-schema.js";
import { parseWeightsSource, type WeightsSource } from "../../catalog/weights-source.js";
import { DomainError } from "../../errors/domain-error.js";
import { hubMirrorPath, mirrorKey, mirrorManifestName, parseMirrorManifest, type MirrorManifest, type MirroredSource } from "../../plan/mirror-manifest.js";
import { connectionFailure, defaultHubEndpoint } from "../../plan/model-files.js";
import { resolveHubRevision } from "../../plan/resolve-hub-revision.js";

export interface MirrorPullSettings {
  readonly to: string;
  readonly hubEndpoint?: string | undefined;
  readonly hubToken?: string | undefined;
  /** One line per file as it is written or found already whole. */
  readonly progress?: (line: string) => void;
}

type HubSource = Extract<WeightsSource, { kind: "hub" }>;

interface ListedFile {
  readonly path: string;
  readonly size: number;
  /** The hub's own sum of an LFS file; small files in git have none. */
  readonly sha256: string | undefined;
}

const hubSettingNames = { endpoint: "--hub-endpoint or HF_ENDPOINT", token: "HF_TOKEN in this shell" };

/**
 * The sources a preset's model needs, every profile's unless `profiles`
 * names some: weights, adapters and a ComfyUI workflow's files. The origin
 * is not among them: it names the unquantised repository for people, and
 * nothing reads it to serve.
 */
export function presetSources(preset: Preset, profiles: readonly string[] = []): string[] {
  const known = (preset.model.profiles ?? []).map((profile, index) => profile.name ?? `#${index}`);
  const unknown = profiles.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new DomainError("invalid_input", `preset ${preset.name} has no profile ${unknown.join(", ")}; its profiles are: ${known.join(", ")}`, "Name one of its profiles with --profile, or leave --profile out to pull them all.");
  }
  const chosen = (preset.model.profiles ?? []).filter((profile, index) => profiles.length === 0 || profiles.includes(profile.name ?? `#${index}`));
  const sources = chosen.flatMap((profile) => [profile.source, ...(profile.comfy?.files ?? []).map((file) => file.source)]);
  return [...new Set([...sources, ...(preset.model.adapters ?? []).map((adapter) => adapter.source)])];
}

function hubSourceOf(source: string): HubSource {
  const parsed = parseWeightsSource(source.trim());
  if (parsed.kind !== "hub") {
    throw new DomainError(
      "invalid_input",
      `"${source}" is not a Hugging Face source; a mirror pull copies hub repositories (hf://org/name[@revision][/file])`,
      "A URL or a path is already somewhere your nodes can be pointed at: copy its files into the mirror folder yourself, with `sha256sum FILE > FILE.sha256` beside each, and name it as mirror:PATH.",
    );
  }
  return parsed;
}

/** The files of `source` in its repository's listing: a repository as the agents fetch it, one file (with the other parts of a split GGUF), or a folder in it. */
function filesOf(source: HubSource, listed: readonly ListedFile[]): ListedFile[] {
  if (source.path === "") {
    const chosen = new Set(selectHubFiles(listed.map((file) => file.path)));
    return listed.filter((file) => chosen.has(file.path));
  }
  const exact = listed.find((file) => file.path === source.path);
  if (exact) {
    const split = /\.gguf$/i.test(exact.path) ? parseGgufShardFilename(exact.path) : null;
    if (!split) return [exact];
    // The planner reads every part of a split GGUF, and llama.cpp loads them from beside the first.
    return listed.filter((file) => parseGgufShardFilename(file.path)?.prefix === split.prefix && parseGgufShardFilename(file.path)?.total === split.total);
  }
  return listed.filter((file) => file.path.startsWith(`${source.path}/`));
}

async function listRepository(source: HubSource, commit: string, settings: MirrorPullSettings): Promise<ListedFile[]> {
  const hubUrl = (settings.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "");
  const listed: ListedFile[] = [];
  try {
    for await (const entry of listFiles({ repo: { type: "model", name: source.repo }, revision: commit, recursive: true, hubUrl, fetch: authorizedFetch(settings) })) {
      if (entry.type === "file") listed.push({ path: entry.path, size: entry.lfs?.size ?? entry.size, sha256: entry.lfs?.oid });
    }
  } catch (error) {
    throw new DomainError("source_unreadable", `cannot list hf://${source.repo}@${source.revision} at ${hubUrl}: ${connectionFailure(error, undefined)}`, `Check ${hubSettingNames.endpoint} and, for a gated repository, ${hubSettingNames.token}.`);
  }
  return listed;
}

function authorizedFetch(settings: MirrorPullSettings): typeof fetch {
  return (input, init) => {
    const headers = new Headers(init?.headers);
    if (settings.hubToken) headers.set("Authorization", `Bearer ${settings.hubToken}`);
    return fetch(input, { ...init, headers });
  };
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch {
    return undefined;
  }
}

/**
 * One file downloaded to `NAME.partial`, hashed as it streams, checked
 * against the size listed and the hub's own sum, then renamed: a cut pull
 * leaves no file a server could take for whole.
 */
async function download(url: string, destination: string, expected: ListedFile, settings: MirrorPullSettings): Promise<string> {
  await mkdir(path.dirname(destination), { recursive: true });
  const partial = `${destination}.partial`;
  let response: Response;
  try {
    response = await authorizedFetch(settings)(url, {});
  } catch (error) {
    throw new DomainError("source_unreadable", `cannot fetch ${url}: ${connectionFailure(error, undefined)}`, `Check ${hubSettingNames.endpoint}; run the pull again to fetch what is missing.`);
  }
  if (!response.ok || !response.body) {
    throw new DomainError("source_unreadable", `cannot fetch ${url}: the hub answered ${response.status}`, response.status === 401 || response.status === 403 ? `The repository is gated: set ${hubSettingNames.token} and accept its licence.` : "Check the repository and revision.");
  }
  const hash = createHash("sha256");
  const body = Readable.fromWeb(response.body as import("node:stream/web").ReadableStream<Uint8Array>);
  body.on("data", (chunk: Buffer) => hash.update(chunk));
  await pipeline(body, createWriteStream(partial));
  const sum = hash.digest("hex");
  const size = (await stat(partial)).size;
  const wrong = size !== expected.size ? `${size} bytes where the hub lists ${expected.size}` : expected.sha256 !== undefined && expected.sha256 !== sum ? `sha256 ${sum} where the hub lists ${expected.sha256}` : undefined;
  if (wrong !== undefined) {
    await rm(partial, { force: true });
    throw new DomainError("checksum_mismatch", `${url} arrived as ${wrong}; the file was not kept`, "Run the pull again; if it keeps failing, the hub (or a proxy on the way) serves another file than it lists.");
  }
  await rename(partial, destination);
  return sum;
}

/** The manifest already in the folder, or an empty one. */
export async function readFolderManifest(folder: string): Promise<MirrorManifest> {
  const file = path.join(folder, mirrorManifestName);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return { format: 1, sources: {} };
    throw error;
  }
  return parseMirrorManifest(text, file);
}

/**
 * Copies each hub source's files into the mirror folder `settings.to`,
 * under hf/ORG/NAME/REVISION/, with `FILE.sha256` beside each, and records
 * each source in the folder's manifest. A file already there whole (its
 * size and recorded sum agree) is not fetched again. The manifest is
 * written after each source's files, and replaced whole, so it never names
 * a file that is not there.
 */
export async function pullToMirror(sources: readonly string[], settings: MirrorPullSettings): Promise<MirrorManifest> {
  const folder = path.resolve(settings.to);
  const hubSources = sources.map(hubSourceOf);
  await mkdir(folder, { recursive: true });
  const manifest = await readFolderManifest(folder);
  const recorded = new Map(Object.values(manifest.sources).flatMap((entry) => entry.files.map((file) => [file.path, file] as const)));
  const hubUrl = (settings.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "");
  for (const source of hubSources) {
    const commit = await resolveHubRevision(source.repo, source.revision, { hubEndpoint: hubUrl, ...(settings.hubToken ? { hubToken: settings.hubToken } : {}), hubSettings: hubSettingNames });
    const files = filesOf(source, await listRepository(source, commit, settings));
    if (files.length === 0) {
      throw new DomainError("source_unreadable", `hf://${source.repo}@${source.revision}${source.path ? `/${source.path}` : ""} has no such file or folder at ${hubUrl}`, "Check the path after the revision; it names a file or folder in the repository.");
    }
    const root = `hf/${source.repo}/${source.revision}`;
    const written: MirroredSource["files"][number][] = [];
    for (const file of files) {
      const relative = `${root}/${file.path}`;
      const destination = path.join(folder, ...relative.split("/"));
      const known = recorded.get(relative);
      let sum: string;
      if (known && known.bytes === file.size && (await sizeOf(destination)) === file.size && (await sha256Of(destination)) === known.sha256) {
        sum = known.sha256;
        settings.progress?.(`  ${relative}  already whole (${file.size} bytes)`);
      } else {
        const url = `${hubUrl}/${source.repo}/resolve/${commit}/${file.path.split("/").map(encodeURIComponent).join("/")}`;
        sum = await download(url, destination, file, settings);
        settings.progress?.(`  ${relative}  ${file.size} bytes  sha256 ${sum}`);
      }
      await writeFile(`${destination}.sha256`, `${sum}  ${path.basename(destination)}\n`);
      written.push({ path: relative, bytes: file.size, sha256: sum });
    }
    const key = mirrorKey(`hf://${source.repo}@${source.revision}${source.path ? `/${source.path}` : ""}`) as string;
    manifest.sources[key] = { mirror_source: `mirror:${hubMirrorPath(source)}`, commit, pulled_at: new Date().toISOString(), files: written };
    // After each source: a pull cut by a later one keeps what it finished.
    await writeManifest(folder, manifest);
  }
  return manifest;
}

/** Replaced whole (written beside, then renamed): a reader never sees half a manifest. */
async function writeManifest(folder: string, manifest: MirrorManifest): Promise<void> {
  const file = path.join(folder, mirrorManifestName);
  await writeFile(`${file}.partial`, `${JSON.stringify(manifest, null, 2)}\n`);
  await rename(`${file}.partial`, file);
}
