import { isRetryableStatus, withUrlCredentials } from "../../net/index.js";
import { createHash } from "node:crypto";
import { mkdir, open, readFile, rename, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { Writable } from "node:stream";
import { request, type Dispatcher } from "undici";
import { redactUrl } from "../../catalog/for-agent.js";
import { DomainError } from "../../errors/light.js";
import { checksumFromHeaders } from "../weights-source.js";
import type { FetchWeightsOptions, RemoteFile } from "./fetch-options.js";
import { ProgressCounter } from "./progress-counter.js";
import { publishedChecksum, sha256OfFile } from "./published-checksum.js";
import { attemptLimit, attempts, headerText, redirectingDispatcher, unavailable } from "./remote-requests.js";
import { roomShortage, sizeOf } from "./weights-cache.js";

/**
 * Downloads one file to `destination` through `destination.partial`, resuming
 * with a Range request after a broken connection (a 70 GB shard must not
 * restart from zero because a proxy dropped it at 60 GB). If-Range with the
 * ETag makes a server whose file changed meanwhile send it whole, so the
 * partial never mixes two versions. The file appears under its real name only
 * when complete and, when a checksum is known, verified.
 */
export async function downloadFile(file: RemoteFile, destination: string, options: FetchWeightsOptions, progress: ProgressCounter): Promise<void> {
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
    // Bytes are counted once they are on disk, not as they pass by: a stop then leaves a partial
    // holding exactly what was reported, and the next start resumes from there.
    const handle = await open(partial, status === 206 ? "a" : "w");
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        handle.write(chunk).then(
          () => {
            written += chunk.length;
            hash?.update(chunk);
            progress.set(file.relativePath, written);
            callback();
          },
          (error: unknown) => callback(error as Error),
        );
      },
    });
    try {
      await pipeline(response.body, sink);
    } catch (error) {
      // Closing waits for a write still in flight: a fetch started after this one stopped must
      // not find its partial growing under it, nor bytes of this answer landing after its own.
      await handle.close();
      options.signal?.throwIfAborted();
      lastProblem = `the connection broke after ${written} bytes (${(error as Error).message})`;
      continue;
    }
    await handle.close();
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
