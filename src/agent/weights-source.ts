import { createHash } from "node:crypto";
import path from "node:path";
import { DomainError } from "../errors/light.js";

import type { WeightsSource } from "../catalog/index.js";

const sha256Pattern = /^[0-9a-f]{64}$/;

/** A path segment safe on every file system we run on, and never `..`. */
function safeSegment(segment: string): string {
  const cleaned = segment.replace(/[^A-Za-z0-9._-]/g, "_");
  return cleaned === "" || cleaned === "." || cleaned === ".." ? "_" : cleaned;
}

/**
 * Where a source lives in the weights cache, relative to it. Readable (an
 * operator clearing the cache by hand can tell what is what) and stable, so a
 * restarted agent finds what it fetched before and does not fetch it again.
 */
export function cacheLocation(source: WeightsSource): string {
  switch (source.kind) {
    case "http-file":
    case "http-folder": {
      const url = new URL(source.url);
      const segments = url.pathname.split("/").filter((segment) => segment.length > 0).map(safeSegment);
      if (url.search !== "") {
        // Two URLs that differ only in their query are two files; keep them apart.
        const queryHash = createHash("sha256").update(url.search).digest("hex").slice(0, 8);
        segments.push(`${segments.pop() ?? "index"}_${queryHash}`);
      }
      if (source.kind === "http-file" && source.sha256 !== undefined) {
        // A pinned file lives apart, under its pin: a copy cached without the pin (or under another)
        // was never checked against it and must not be served in its place. The name is kept for the engines.
        const name = segments.pop() ?? "index";
        segments.push(`${name}.sha256-${source.sha256}`, name);
      }
      return path.join("http", safeSegment(url.host), ...segments);
    }
    case "hub":
      return path.join(
        "hf",
        ...source.repo.split("/").map(safeSegment),
        safeSegment(source.revision),
        ...source.path.split("/").filter((segment) => segment.length > 0).map(safeSegment),
      );
    case "local":
      return source.path;
  }
}

export function checksumFromHeaders(headers: Record<string, string | string[] | undefined>): string | undefined {
  // The hub sends the LFS file's sha256 as X-Linked-Etag (on the redirect) or ETag; other servers' ETags are opaque.
  for (const name of ["x-linked-etag", "etag"]) {
    const value = headers[name];
    const text = (Array.isArray(value) ? value[0] : value)?.replace(/^W\//, "").replace(/"/g, "").toLowerCase();
    if (text !== undefined && sha256Pattern.test(text)) return text;
  }
  return undefined;
}

/**
 * The links of an autoindex page (nginx, Apache, python -m http.server): the
 * files and subfolders directly under the folder. Sorting links, parent links,
 * absolute links elsewhere and query links are dropped.
 */
export function parseFolderListing(html: string, folderUrl: string): { files: string[]; folders: string[] } {
  const files = new Set<string>();
  const folders = new Set<string>();
  const folder = new URL(folderUrl);
  for (const match of html.matchAll(/href\s*=\s*["']([^"']+)["']/gi)) {
    const href = (match[1] ?? "").replace(/&amp;/g, "&");
    if (href.startsWith("?") || href.startsWith("#")) continue;
    let target: URL;
    try {
      target = new URL(href, folder);
    } catch {
      continue;
    }
    if (target.origin !== folder.origin || target.search !== "" || !target.pathname.startsWith(folder.pathname)) continue;
    const relative = decodeURIComponent(target.pathname.slice(folder.pathname.length));
    if (relative === "" || relative.startsWith("/")) continue;
    const name = relative.endsWith("/") ? relative.slice(0, -1) : relative;
    // Only direct children: deeper links would be fetched twice when their folder is listed.
    if (name.includes("/") || name === "." || name === "..") continue;
    if (relative.endsWith("/")) folders.add(name);
    else files.add(name);
  }
  return { files: [...files].sort(), folders: [...folders].sort() };
}

/** Files that go with a safetensors index: the config and tokenizer the engines read beside the shards. */
export const companionFiles = [
  "config.json",
  "generation_config.json",
  "tokenizer.json",
  "tokenizer_config.json",
  "tokenizer.model",
  "special_tokens_map.json",
  "vocab.json",
  "merges.txt",
  "chat_template.jinja",
  "preprocessor_config.json",
] as const;

export function shardsFromIndex(indexText: string, where: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(indexText);
  } catch {
    throw new DomainError("source_unavailable", `${where} is not JSON`, "Serve the model.safetensors.index.json the model was saved with.");
  }
  const weightMap = (parsed as { weight_map?: unknown }).weight_map;
  if (typeof weightMap !== "object" || weightMap === null) {
    throw new DomainError("source_unavailable", `${where} has no weight_map`, "Serve the model.safetensors.index.json the model was saved with.");
  }
  const shards = new Set<string>();
  for (const value of Object.values(weightMap)) {
    if (typeof value !== "string") continue;
    // Only names inside the folder: an index naming "https://elsewhere/…", "/etc/…" or "../…" must not
    // make the agent fetch from another place or write outside the cache.
    const outside = /^[a-z][a-z0-9+.-]*:/i.test(value) || value.startsWith("/") || value.includes("\\") || value.split("/").some((segment) => segment === ".." || segment === "");
    if (outside) {
      throw new DomainError("source_unavailable", `${where} names a shard outside its folder: "${value}"`, "Serve an index whose weight_map names files in the same folder.");
    }
    shards.add(value);
  }
  return [...shards].sort();
}

/**
 * Which files of a hub repository an engine needs. A repository often holds
 * the same weights several times (safetensors, pytorch .bin, GGUF, an
 * original/ checkpoint); fetching all of them doubles or triples the download,
 * so with safetensors present only they and the small files are kept.
 */
export function selectHubFiles(paths: readonly string[]): string[] {
  const hasSafetensors = paths.some((file) => file.endsWith(".safetensors"));
  if (!hasSafetensors) return paths.filter((file) => file !== ".gitattributes");
  return paths.filter((file) => {
    if (file === ".gitattributes" || file.startsWith("original/")) return false;
    return !/\.(bin|pt|pth|msgpack|h5|gguf|onnx|ckpt)$/.test(file);
  });
}

/** The name a mirror gives a file's checksum: sha256sum's output, beside the file. */
export const checksumSuffix = ".sha256";

/**
 * The sum for `fileName` in a `<file>.sha256` a mirror publishes beside it,
 * in sha256sum's format (`HEX  name`, `HEX *name`, or the bare HEX). A file
 * listing several sums gives the line naming this file. Anything else is
 * refused rather than skipped: a mirror that publishes sums and serves an
 * error page in their place must not turn into a mirror that is not checked.
 */
export function sha256FromChecksumFile(text: string, fileName: string, where: string): string {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
  const entries = lines.map((line) => {
    const match = /^([0-9a-fA-F]{64})(?:\s+\*?(.+))?$/.exec(line);
    return match ? { sha256: (match[1] ?? "").toLowerCase(), name: match[2] } : undefined;
  });
  const refused = (why: string) =>
    new DomainError("source_unavailable", `${where} ${why}`, "Publish the file's sum as `sha256sum FILE > FILE.sha256` writes it, or remove the .sha256 file.");
  if (entries.length === 0 || entries.some((entry) => entry === undefined)) throw refused("is not in sha256sum format (64 hex digits, then the file name)");
  const parsed = entries.filter((entry) => entry !== undefined);
  if (parsed.length === 1) return (parsed[0] as { sha256: string }).sha256;
  const named = parsed.find((entry) => entry.name !== undefined && path.posix.basename(entry.name) === fileName);
  if (!named) throw refused(`lists ${parsed.length} sums and none for ${fileName}`);
  return named.sha256;
}
