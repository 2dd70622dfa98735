import { isRetryableStatus, withUrlCredentials } from "../../net/index.js";
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { pipeline } from "node:stream/promises";
import { request } from "undici";
import { redactUrl } from "../../catalog/for-agent.js";
import { DomainError } from "../../errors/light.js";
import { checksumSuffix, sha256FromChecksumFile } from "../weights-source.js";
import type { FetchWeightsOptions, RemoteFile } from "./fetch-options.js";
import { attempts, headerText, redirectingDispatcher, unavailable } from "./remote-requests.js";

export async function sha256OfFile(file: string): Promise<string> {
  const hash = createHash("sha256");
  await pipeline(createReadStream(file), hash);
  return hash.digest("hex");
}

/**
 * The URL of a file's `.sha256` beside it: the suffix goes on the path, the query stays. A presigned
 * URL's signature covers the file, not its sum, so such a mirror answers 403: no sum published.
 */
export function withChecksumSuffix(fileUrl: string): string {
  const url = new URL(fileUrl);
  url.pathname = `${url.pathname}${checksumSuffix}`;
  return url.toString();
}

/** A checksum file is a line per file; one larger than this is not one. */
export const maxChecksumFileBytes = 1024 * 1024;

/**
 * The sum a mirror publishes in `<file>.sha256`, or undefined when it
 * publishes none there (404, or 401/403/410 as object stores answer for a
 * missing key). A server error or a broken connection is asked again, as the
 * file itself would be: skipping the check because the mirror hiccuped
 * would let the one bad copy through unchecked.
 */
export async function publishedChecksum(file: RemoteFile, options: FetchWeightsOptions): Promise<string | undefined> {
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
