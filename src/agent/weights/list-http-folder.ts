import { redactUrl } from "../../catalog/for-agent.js";
import { checksumSuffix, companionFiles, parseFolderListing, shardsFromIndex } from "../weights-source.js";
import type { FetchWeightsOptions, RemoteFile } from "./fetch-options.js";
import { withChecksumSuffix } from "./published-checksum.js";
import { getText, headSize, unavailable } from "./remote-requests.js";

export const maxListedFiles = 10_000;
export const maxListingDepth = 4;

/** The files under an http folder: from its autoindex page, or else from model.safetensors.index.json. */
export async function listHttpFolder(folderUrl: string, options: FetchWeightsOptions): Promise<RemoteFile[]> {
  const files: RemoteFile[] = [];
  /** A listing request that could not connect names the folder and the node, not only "connect ECONNREFUSED". */
  const reach = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      options.signal?.throwIfAborted();
      throw unavailable(
        `could not list ${redactUrl(folderUrl)} on node ${options.nodeName}: ${(error as Error).message}`,
        "Check that the source's host and port are right and reachable from this node (a firewall or proxy in between); a restart of the replica tries again.",
      );
    }
  };
  const walk = async (url: string, prefix: string, depth: number): Promise<boolean> => {
    const page = await reach(() => getText(url, {}, options.signal));
    if (page.status !== 200 || !/html/i.test(page.type)) return false;
    const listing = parseFolderListing(page.text, url);
    const listed = new Set(listing.files);
    for (const name of listing.files) {
      // A listed `x.sha256` beside `x` is x's checksum, read when x is fetched, not a file of the model.
      if (name.endsWith(checksumSuffix) && listed.has(name.slice(0, -checksumSuffix.length))) continue;
      const fileUrl = new URL(encodeURIComponent(name), url).toString();
      const checksumUrl = listed.has(`${name}${checksumSuffix}`) ? new URL(encodeURIComponent(`${name}${checksumSuffix}`), url).toString() : undefined;
      files.push({ url: fileUrl, relativePath: prefix + name, size: undefined, sha256: undefined, checksumUrl, headers: {} });
    }
    if (files.length > maxListedFiles) throw unavailable(`${redactUrl(folderUrl)} lists more than ${maxListedFiles} files`, "Point the source at the model's own folder.");
    if (depth < maxListingDepth) {
      for (const folder of listing.folders) await walk(new URL(`${encodeURIComponent(folder)}/`, url).toString(), `${prefix}${folder}/`, depth + 1);
    }
    return true;
  };
  if (await walk(folderUrl, "", 0)) {
    if (files.length === 0) throw unavailable(`${redactUrl(folderUrl)} lists no files (fetched on node ${options.nodeName})`, "Check the folder URL; it must list the model's files.");
  } else {
    const indexUrl = new URL("model.safetensors.index.json", folderUrl).toString();
    const index = await reach(() => getText(indexUrl, {}, options.signal));
    if (index.status !== 200) {
      throw unavailable(
        `could not fetch ${redactUrl(folderUrl)} on node ${options.nodeName}: the folder has no listing and ${redactUrl(indexUrl)} answered ${index.status}`,
        "Serve the folder with a directory listing (nginx autoindex on), or put model.safetensors.index.json in it, or name one file.",
      );
    }
    const names = ["model.safetensors.index.json", ...shardsFromIndex(index.text, redactUrl(indexUrl))];
    for (const companion of companionFiles) {
      const url = new URL(companion, folderUrl).toString();
      const head = await reach(() => headSize(url, {}, options.signal));
      if (head.status === 200) names.push(companion);
    }
    // Without a listing there is no telling which files have a sum beside them: each is asked for.
    for (const name of names) {
      const fileUrl = new URL(name, folderUrl).toString();
      files.push({ url: fileUrl, relativePath: name, size: undefined, sha256: undefined, checksumUrl: withChecksumSuffix(fileUrl), headers: {} });
    }
  }
  // Sizes up front, so progress is a fraction of the whole folder from the first byte.
  for (const file of files) {
    if (file.size === undefined) file.size = (await reach(() => headSize(file.url, file.headers, options.signal))).size;
  }
  return files;
}
