import { isRetryableStatus } from "../net/retryable-status.js";
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, readFile, rename, rm, stat, statfs, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Transform } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { listFiles } from "@huggingface/hub";
import { Agent, interceptors, request, type Dispatcher } from "undici";
import { withUrlCredentials } from "../net/url-credentials.js";
import { redactUrl } from "../catalog/redact.js";
import { DomainError } from "../errors/domain-error.js";
import {
  cacheLocation,
  checksumFromHeaders,
  checksumSuffix,
  companionFiles,
  parseFolderListing,
  selectHubFiles,
  sha256FromChecksumFile,
  shardsFromIndex,
} from "./weights-source.js";
import { parseWeightsSource, type WeightsSource } from "../catalog/weights-source.js";

export interface FetchProgress {
  readonly bytesDone: number;
  /** Undefined until every file's size is known. */
  readonly bytesTotal: number | undefined;
}

export interface FetchWeightsOptions {
  readonly source: string;
  /** DATA_DIR/weights */
  readonly cacheDirectory: string;
  /** Named in failure reasons, so an operator knows which machine could not fetch. */
  readonly nodeName: string;
  readonly hubUrl: string;
  readonly hubToken: string | undefined;
  readonly onProgress?: ((progress: FetchProgress) => void) | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Attempts per file when the connection breaks; each resumes where the last stopped. */
  readonly maxAttempts?: number | undefined;
  /** First pause between attempts, doubled each time. */
  readonly retryDelayMs?: number | undefined;
}

interface RemoteFile {
  readonly url: string;
  /** Relative to the source's cache folder; "" for a single-file source. */
  readonly relativePath: string;
  size: number | undefined;
  readonly sha256: string | undefined;
  /** Where the mirror may publish the file's sum (`<file>.sha256`); undefined when it cannot (the hub) or does not (a listing without one). */
  readonly checksumUrl: string | undefined;
  readonly headers: Record<string, string>;
}

/** A folder is complete once this marker exists; without it a restarted agent checks every file again. */
const completeMarker = ".llmgw-complete";

// Follows the hub's redirect to its CDN; undici strips Authorization on a cross-origin redirect.
const redirectingDispatcher: Dispatcher = new Agent({ connectTimeout: 30_000, headersTimeout: 60_000, bodyTimeout: 120_000 }).compose(
  interceptors.redirect({ maxRedirections: 5 }),
);

function unavailable(what: string, hint: string): DomainError {
  return new DomainError("source_unavailable", what, hint);
}

function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

async function sizeOf(file: string): Promise<number | undefined> {
  try {
    return (await stat(file)).size;
  } catch {
    return undefined;
  }
}

async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

class ProgressCounter {
  private readonly done = new Map<string, number>();
  constructor(
    private readonly files: readonly RemoteFile[],
    private readonly report: ((progress: FetchProgress) => void) | undefined,
  ) {}
  set(relativePath: string, bytes: number): void {
    this.done.set(relativePath, bytes);
    this.emit();
  }
  emit(): void {
    if (!this.report) return;
    let bytesDone = 0;
    for (const bytes of this.done.values()) bytesDone += bytes;
    const sizes = this.files.map((file) => file.size);
    const bytesTotal = sizes.every((size) => size !== undefined) ? sizes.reduce<number>((sum, size) => sum + (size ?? 0), 0) : undefined;
    this.report({ bytesDone, bytesTotal: bytesTotal === undefined ? undefined : Math.max(bytesTotal, bytesDone) });
  }
}

/**
 * Attempt numbers from 1, pausing between them (doubling, at most 30 s).
 * At least one, so a failure always has a problem to name.
 */
async function* attempts(options: FetchWeightsOptions): AsyncGenerator<number> {
  let delay = options.retryDelayMs ?? 500;
  for (let attempt = 1; attempt <= attemptLimit(options); attempt += 1) {
    options.signal?.throwIfAborted();
    if (attempt > 1) {
      await sleep(delay, undefined, { signal: options.signal });
      delay = Math.min(delay * 2, 30_000);
    }
    yield attempt;
  }
}

function attemptLimit(options: FetchWeightsOptions): number {
  return Math.max(1, options.maxAttempts ?? 6);
}

/**
 * The URL of a file's `.sha256` beside it: the suffix goes on the path, the query stays. A presigned
 * URL's signature covers the file, not its sum, so such a mirror answers 403: no sum published.
 */
function withChecksumSuffix(fileUrl: string): string {
  const url = new URL(fileUrl);
  url.pathname = `${url.pathname}${checksumSuffix}`;
  return url.toString();
}

/** A checksum file is a line per file; one larger than this is not one. */
const maxChecksumFileBytes = 1024 * 1024;

/**
 * The sum a mirror publishes in `<file>.sha256`, or undefined when it
 * publishes none there (404, or 401/403/410 as object stores answer for a
 * missing key). A server error or a broken connection is asked again, as the
 * file itself would be: skipping the check because the mirror hiccuped
 * would let the one bad copy through unchecked.
 */
async function publishedChecksum(file: RemoteFile, options: FetchWeightsOptions): Promise<string | undefined> {
  if (file.checksumUrl === undefined) return undefined;
  const where = redactUrl(file.checksumUrl);
  const fileName = decodeURIComponent(new URL(file.url).pathname.split("/").pop() ?? "");
  let lastProblem = "no attempt got an answer";
  for await (const _attempt of attempts(options)) {
    try {
      const target = withUrlCredentials(file.checksumUrl, { ...file.headers });
      const response = await request(target.url, { method: "GET", headers: target.headers, dispatcher: redirectingDispatcher, signal: options.signal });
      if (response.statusCode === 200) {
        const length = Number(headerText(response.headers["content-length"]) ?? 0);
        if (length > maxChecksumFileBytes) {
          response.body.destroy();
          throw unavailable(`${where} is ${length} bytes, too large for a checksum file`, "Publish the file's sum as `sha256sum FILE > FILE.sha256` writes it.");
        }
        return sha256FromChecksumFile(await response.body.text(), fileName, where);
      }
      await response.body.dump();
      if ([401, 403, 404, 410].includes(response.statusCode)) return undefined;
      lastProblem = `the server answered ${response.statusCode}`;
      if (!isRetryableStatus(response.statusCode)) break;
    } catch (error) {
      options.signal?.throwIfAborted();
      if (error instanceof DomainError) throw error;
      lastProblem = `could not connect (${(error as Error).message})`;
    }
  }
  throw unavailable(
    `could not read the checksum ${where} on node ${options.nodeName}: ${lastProblem}`,
    "Check the node's network to the mirror; a restart of the replica tries again.",
  );
}

/**
 * Downloads one file to `destination` through `destination.partial`, resuming
 * with a Range request after a broken connection (a 70 GB shard must not
 * restart from zero because a proxy dropped it at 60 GB). If-Range with the
 * ETag makes a server whose file changed meanwhile send it whole, so the
 * partial never mixes two versions. The file appears under its real name only
 * when complete and, when a checksum is known, verified.
 */
async function downloadFile(file: RemoteFile, destination: string, options: FetchWeightsOptions, progress: ProgressCounter): Promise<void> {
  const existing = await sizeOf(destination);
  if (existing !== undefined) {
    progress.set(file.relativePath, existing);
    return;
  }
  await mkdir(path.dirname(destination), { recursive: true });
  // Read before the first byte, so a sum the mirror cannot serve fails the fetch before a 70 GB download.
  const published = file.sha256 ?? (await publishedChecksum(file, options));
  const partial = `${destination}.partial`;
  const metaFile = `${destination}.partial.json`;
  let etag: string | undefined;
  try {
    etag = (JSON.parse(await readFile(metaFile, "utf8")) as { etag?: string }).etag;
  } catch {
    etag = undefined;
  }
  /**
   * The partial is whole: it becomes the file once it matches the checksum, when one is known.
   * `streamedSha256` is the sum taken as the bytes arrived, when they all came in one answer; without it the file is read again.
   */
  const finish = async (size: number, expectedSha256: string | undefined, streamedSha256?: string): Promise<void> => {
    if (expectedSha256 !== undefined) {
      const actual = streamedSha256 ?? (await sha256OfFile(partial));
      if (actual !== expectedSha256) {
        await rm(partial, { force: true });
        await rm(metaFile, { force: true });
        throw new DomainError(
          "checksum_mismatch",
          `${redactUrl(file.url)} fetched on node ${options.nodeName} has sha256 ${actual}, but the source published ${expectedSha256}`,
          "Fetch it again (the partial file was removed); if it repeats, the file on the server differs from its published checksum.",
        );
      }
    }
    await rename(partial, destination);
    await rm(metaFile, { force: true });
    progress.set(file.relativePath, size);
  };
  const maxAttempts = attemptLimit(options);
  let lastProblem = "no attempt got an answer";
  for await (const _attempt of attempts(options)) {
    let offset = (await sizeOf(partial)) ?? 0;
    /** The size this partial was started against, to tell a resumed range of another version of the file. */
    const sizeBefore = file.size;
    const headers: Record<string, string> = { ...file.headers };
    if (offset > 0) {
      headers.range = `bytes=${offset}-`;
      if (etag !== undefined) headers["if-range"] = etag;
    }
    let response: Dispatcher.ResponseData;
    try {
      const target = withUrlCredentials(file.url, headers);
      response = await request(target.url, { method: "GET", headers: target.headers, dispatcher: redirectingDispatcher, signal: options.signal });
    } catch (error) {
      options.signal?.throwIfAborted();
      lastProblem = `could not connect (${(error as Error).message})`;
      continue;
    }
    const status = response.statusCode;
    if (status === 416) {
      await response.body.dump();
      // "bytes */TOTAL": the file's whole size, which a single-file source learns only here.
      const total = /^bytes \*\/(\d+)$/.exec(headerText(response.headers["content-range"]) ?? "")?.[1];
      const size = total !== undefined ? Number(total) : file.size;
      if (offset > 0 && size === offset) {
        // The partial already holds the whole file: the agent stopped after the last byte (while
        // checksumming or renaming). Asking again would be refused the same way at every restart.
        file.size = size;
        await finish(size, published ?? checksumFromHeaders(response.headers));
        return;
      }
      // The partial is longer than the file now is: start again from zero.
      await rm(partial, { force: true });
      lastProblem = `the server refused the resume range from byte ${offset}${size !== undefined ? ` of a ${size}-byte file` : ""}`;
      continue;
    }
    if (status !== 200 && status !== 206) {
      await response.body.dump();
      if (!isRetryableStatus(status)) {
        throw unavailable(
          `could not fetch ${redactUrl(file.url)} on node ${options.nodeName}: the server answered ${status}${status === 404 ? " (not found)" : status === 401 || status === 403 ? " (not allowed)" : ""}`,
          status === 401 || status === 403
            ? "Give the agent a token for this source (HF_TOKEN for the hub), or make the file readable."
            : "Check the profile's source: the URL must name a file that exists (a folder ends in /).",
        );
      }
      lastProblem = `the server answered ${status}`;
      continue;
    }
    const contentRange = headerText(response.headers["content-range"]);
    if (status === 206) {
      const range = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(contentRange ?? "");
      const rangeTotal = range?.[3] === "*" || range === null ? undefined : Number(range[3]);
      if (!range || Number(range[1]) !== offset || (sizeBefore !== undefined && rangeTotal !== undefined && rangeTotal !== sizeBefore)) {
        // A range other than the one asked for, or the tail of a file of another size (it changed on the
        // server since the partial began), would corrupt the file if appended: start again from zero.
        await response.body.dump();
        await rm(partial, { force: true });
        lastProblem = `the server sent range "${contentRange ?? ""}" for a request from byte ${offset}`;
        continue;
      }
    } else {
      offset = 0;
    }
    const length = Number(headerText(response.headers["content-length"]) ?? Number.NaN);
    const total = /\/(\d+)$/.exec(contentRange ?? "")?.[1];
    if (total !== undefined) file.size = Number(total);
    else if (Number.isFinite(length)) file.size = offset + length;
    if (file.size !== undefined) {
      // A single-URL source learns its size only here: the check before a folder or hub download
      // cannot cover it. Bytes already in the partial need no more room (a 206 appends to them,
      // a 200 overwrites them).
      const needed = file.size - ((await sizeOf(partial)) ?? 0);
      const shortage = await roomShortage(options.cacheDirectory, needed, redactUrl(file.url), options.nodeName);
      if (shortage) {
        response.body.destroy();
        throw shortage;
      }
    }
    const responseEtag = headerText(response.headers.etag);
    etag = responseEtag ?? etag;
    const expectedSha256 = published ?? checksumFromHeaders(response.headers);
    if (responseEtag !== undefined) await writeFile(metaFile, JSON.stringify({ etag: responseEtag }));
    let written = offset;
    progress.set(file.relativePath, written);
    // A whole file is hashed as it arrives, so a 70 GB shard is not read a second time to verify it.
    // A resumed one is hashed from disk at the end: reading its first part here would hold the answer's
    // body back for as long as that takes, past the server's patience on a slow disk.
    const hash = expectedSha256 !== undefined && offset === 0 ? createHash("sha256") : undefined;
    const counter = new Transform({
      transform(chunk: Buffer, _encoding, callback) {
        written += chunk.length;
        hash?.update(chunk);
        progress.set(file.relativePath, written);
        callback(null, chunk);
      },
    });
    try {
      await pipeline(response.body, counter, createWriteStream(partial, { flags: status === 206 ? "a" : "w" }));
    } catch (error) {
      options.signal?.throwIfAborted();
      lastProblem = `the connection broke after ${written} bytes (${(error as Error).message})`;
      continue;
    }
    const size = (await sizeOf(partial)) ?? 0;
    if (file.size !== undefined && size < file.size) {
      lastProblem = `the connection ended after ${size} of ${file.size} bytes`;
      continue;
    }
    await finish(size, expectedSha256, hash?.digest("hex"));
    return;
  }
  throw unavailable(
    `could not fetch ${redactUrl(file.url)} on node ${options.nodeName} after ${maxAttempts} attempt${maxAttempts === 1 ? "" : "s"}: ${lastProblem}`,
    "Check the node's network to the source; a restart of the replica resumes where this stopped.",
  );
}

async function getText(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<{ status: number; text: string; type: string }> {
  const target = withUrlCredentials(url, headers);
  const response = await request(target.url, { method: "GET", headers: target.headers, dispatcher: redirectingDispatcher, signal });
  const text = response.statusCode === 200 ? await response.body.text() : (await response.body.dump(), "");
  return { status: response.statusCode, text, type: headerText(response.headers["content-type"]) ?? "" };
}

async function headSize(url: string, headers: Record<string, string>, signal: AbortSignal | undefined): Promise<{ status: number; size: number | undefined }> {
  const target = withUrlCredentials(url, headers);
  const response = await request(target.url, { method: "HEAD", headers: target.headers, dispatcher: redirectingDispatcher, signal });
  await response.body.dump();
  const length = Number(headerText(response.headers["content-length"]) ?? Number.NaN);
  return { status: response.statusCode, size: Number.isFinite(length) ? length : undefined };
}

const maxListedFiles = 10_000;
const maxListingDepth = 4;

/** The files under an http folder: from its autoindex page, or else from model.safetensors.index.json. */
async function listHttpFolder(folderUrl: string, options: FetchWeightsOptions): Promise<RemoteFile[]> {
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

async function listHubFiles(source: Extract<WeightsSource, { kind: "hub" }>, options: FetchWeightsOptions): Promise<{ files: RemoteFile[]; singleFile: boolean }> {
  const hubUrl = options.hubUrl.replace(/\/+$/, "");
  const headers: Record<string, string> = options.hubToken ? { authorization: `Bearer ${options.hubToken}` } : {};
  const listed: { path: string; size: number; sha256: string | undefined }[] = [];
  try {
    for await (const entry of listFiles({
      repo: { type: "model", name: source.repo },
      revision: source.revision,
      recursive: true,
      hubUrl,
      ...(options.hubToken ? { accessToken: options.hubToken } : {}),
    })) {
      if (entry.type !== "file") continue;
      listed.push({ path: entry.path, size: entry.lfs?.size ?? entry.size, sha256: entry.lfs?.oid });
      if (listed.length > maxListedFiles) break;
    }
  } catch (error) {
    const status = (error as { statusCode?: number }).statusCode;
    throw unavailable(
      `could not list hf://${source.repo}@${source.revision} at ${redactUrl(hubUrl)} on node ${options.nodeName}: ${status !== undefined ? `the hub answered ${status}` : (error as Error).message}`,
      status === 401 || status === 403 || status === 404
        ? "Check the repository name and revision; a gated or private repository needs HF_TOKEN on the agent."
        : "Check the node's network to the hub (or set --hf-endpoint to a mirror).",
    );
  }
  const wanted = source.path;
  const exact = listed.find((entry) => entry.path === wanted);
  const selected = exact
    ? [exact]
    : wanted === ""
      ? listed.filter((entry) => selectHubFiles(listed.map((item) => item.path)).includes(entry.path))
      : listed.filter((entry) => entry.path.startsWith(`${wanted}/`));
  if (selected.length === 0) {
    throw unavailable(
      `hf://${source.repo}@${source.revision}${wanted ? `/${wanted}` : ""} at ${redactUrl(hubUrl)} has no files${wanted ? ` under ${wanted}` : ""} (listed on node ${options.nodeName})`,
      "Check the path after the revision; it names a file or folder in the repository.",
    );
  }
  const files = selected.map((entry) => ({
    url: `${hubUrl}/${source.repo}/resolve/${encodeURIComponent(source.revision)}/${entry.path.split("/").map(encodeURIComponent).join("/")}`,
    relativePath: exact ? "" : wanted === "" ? entry.path : entry.path.slice(wanted.length + 1),
    size: entry.size,
    sha256: entry.sha256,
    // The hub's own sums are the LFS oids of its file list; it has no .sha256 files.
    checksumUrl: undefined,
    headers,
  }));
  return { files, singleFile: exact !== undefined };
}

/**
 * Refuses a download that cannot fit, before it starts: a disk filled at 95%
 * of a 140 GB model fails late and takes the node's logs and state with it.
 */
async function ensureRoom(directory: string, files: readonly { file: RemoteFile; destination: string }[], source: string, nodeName: string): Promise<void> {
  if (files.some(({ file }) => file.size === undefined)) return;
  let needed = 0;
  for (const { file, destination } of files) {
    // What is on disk already (a finished file, or a partial a restart resumes) needs no more room:
    // counting it would refuse the resume of a large download on a disk that holds most of it.
    const onDisk = (await sizeOf(destination)) ?? (await sizeOf(`${destination}.partial`)) ?? 0;
    needed += Math.max(0, (file.size ?? 0) - onDisk);
  }
  const shortage = await roomShortage(directory, needed, redactUrl(source), nodeName);
  if (shortage) throw shortage;
}

/** The refusal when `needed` bytes do not fit in the free space of `directory`'s disk, or undefined when they do. */
async function roomShortage(directory: string, needed: number, what: string, nodeName: string): Promise<DomainError | undefined> {
  if (needed <= 0) return undefined;
  await mkdir(directory, { recursive: true });
  const disk = await statfs(directory);
  const free = Number(disk.bavail) * Number(disk.bsize);
  if (needed <= free) return undefined;
  const GiB = 1024 ** 3;
  return unavailable(
    `${what} needs ${(needed / GiB).toFixed(1)} GiB but ${directory} on node ${nodeName} has ${(free / GiB).toFixed(1)} GiB free`,
    "Free space in the agent's weights cache (remove models no longer served from DATA_DIR/weights), or give the agent a larger --data-dir.",
  );
}

/** The promise's outcome, or the signal's abort if that comes first: a stopped replica does not wait on another's download. */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return await promise;
  signal.throwIfAborted();
  let onAbort = (): void => undefined;
  const aborted = new Promise<never>((_resolve, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** One download in progress, and everyone watching it: a pull and a replica of one source see the same bytes. */
interface SharedFetch {
  readonly result: Promise<string>;
  readonly watchers: Set<(progress: FetchProgress) => void>;
  last: FetchProgress | undefined;
}

/** Fetches in progress by cache target: two replicas of one model share one download instead of corrupting one partial file. */
const fetchesInFlight = new Map<string, SharedFetch>();

/**
 * Puts a replica's weights in the cache and returns where the engine finds
 * them: a file (one URL, one hub file) or a folder. Local paths are used in
 * place. A source fetched completely before is not fetched again.
 */
export async function fetchWeights(options: FetchWeightsOptions): Promise<string> {
  const source = parseWeightsSource(options.source);
  const key = source.kind === "local" ? undefined : path.join(options.cacheDirectory, cacheLocation(source));
  for (let attempt = 0; key !== undefined && attempt < 3; attempt += 1) {
    const running = fetchesInFlight.get(key);
    if (!running) break;
    const watch = options.onProgress;
    if (watch) {
      running.watchers.add(watch);
      if (running.last) watch(running.last);
    }
    try {
      return await untilAborted(running.result, options.signal);
    } catch (error) {
      // The other fetch was stopped with its replica; this one goes on by itself.
      if (!(error instanceof Error && error.name === "AbortError") || options.signal?.aborted) throw error;
    } finally {
      if (watch) running.watchers.delete(watch);
    }
  }
  if (key === undefined) return await fetchUnshared(options);
  const watchers = new Set<(progress: FetchProgress) => void>(options.onProgress ? [options.onProgress] : []);
  let shared: SharedFetch | undefined;
  const result = fetchUnshared({
    ...options,
    onProgress: (progress) => {
      if (shared) shared.last = progress;
      for (const watch of watchers) watch(progress);
    },
  });
  shared = { result, watchers, last: undefined };
  fetchesInFlight.set(key, shared);
  void result.catch(() => undefined).finally(() => {
    if (fetchesInFlight.get(key) === shared) fetchesInFlight.delete(key);
  });
  return await result;
}

/**
 * Where a source already sits complete in the cache, or undefined: a pull
 * of a model fetched before answers at once, without asking the mirror.
 */
export async function cachedWeights(source: string, cacheDirectory: string): Promise<string | undefined> {
  const parsed = parseWeightsSource(source);
  if (parsed.kind === "local") return (await sizeOf(parsed.path)) === undefined ? undefined : parsed.path;
  const target = path.join(cacheDirectory, cacheLocation(parsed));
  if (parsed.kind === "http-file") return (await sizeOf(target)) === undefined ? undefined : target;
  // A hub source naming one file is a file in the cache; a folder is complete only with its marker.
  const info = await stat(target).catch(() => undefined);
  if (info?.isFile()) return target;
  return (await sizeOf(path.join(target, completeMarker))) === undefined ? undefined : target;
}

async function fetchUnshared(options: FetchWeightsOptions): Promise<string> {
  const source = parseWeightsSource(options.source);
  if (source.kind === "local") {
    if ((await sizeOf(source.path)) === undefined) {
      throw unavailable(
        `local path ${source.path} does not exist on node ${options.nodeName}`,
        "Put the weights at that path on this node (or on a shared mount), or give a URL the agent can fetch.",
      );
    }
    return source.path;
  }
  const target = path.join(options.cacheDirectory, cacheLocation(source));
  if (source.kind === "http-file") {
    // A pin in the source is the sum; without one, the mirror's `<file>.sha256` when it publishes one.
    const checksumUrl = source.sha256 === undefined ? withChecksumSuffix(source.url) : undefined;
    const file: RemoteFile = { url: source.url, relativePath: "", size: undefined, sha256: source.sha256, checksumUrl, headers: {} };
    await downloadFile(file, target, options, new ProgressCounter([file], options.onProgress));
    return target;
  }
  if ((await sizeOf(path.join(target, completeMarker))) !== undefined) {
    options.onProgress?.({ bytesDone: 1, bytesTotal: 1 });
    return target;
  }
  let files: RemoteFile[];
  let singleFile = false;
  if (source.kind === "http-folder") {
    files = await listHttpFolder(source.url, options);
  } else {
    ({ files, singleFile } = await listHubFiles(source, options));
  }
  const placed = files.map((file) => ({
    file,
    destination: singleFile ? target : path.join(target, ...file.relativePath.split("/").filter((segment) => segment !== "..")),
  }));
  await ensureRoom(options.cacheDirectory, placed, options.source, options.nodeName);
  const progress = new ProgressCounter(files, options.onProgress);
  if (!singleFile) progress.emit();
  for (const { file, destination } of placed) await downloadFile(file, destination, options, progress);
  if (singleFile) return target;
  await writeFile(path.join(target, completeMarker), `${new Date().toISOString()} ${redactUrl(options.source)}\n`);
  return target;
}
