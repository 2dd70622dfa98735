import { redactUrl } from "../catalog/index.js";
import { withUrlCredentials } from "../net/index.js";
import { open, readdir, readFile, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { downloadFile, listFiles } from "@huggingface/hub";
import { DomainError } from "../errors/light.js";

/**
 * Read access to the files of one model, wherever they are. The readers ask
 * only for what they need: config.json, the index, and the first bytes of
 * each safetensors file — never the weights themselves.
 */
export interface ModelFiles {
  /** Where the files are, for errors and provenance: "Qwen/Qwen2.5-7B@main via http://…". */
  readonly description: string;
  /** The file's text, or undefined when it does not exist. */
  readText(path: string): Promise<string | undefined>;
  /** Bytes [start, end) of a file, or undefined when it does not exist. */
  readRange(path: string, start: number, end: number): Promise<Uint8Array | undefined>;
  /** Every file path, or undefined when the source cannot list (a plain HTTP mirror). */
  list(): Promise<string[] | undefined>;
}

export function sourceUnreadable(what: string, why: string, hint: string): DomainError {
  return new DomainError("source_unreadable", `${what}: ${why}`, hint);
}

function isNotFound(error: unknown): boolean {
  return typeof error === "object" && error !== null && (error as { code?: unknown }).code === "ENOENT";
}

export function localFolderFiles(folder: string): ModelFiles {
  return {
    description: folder,
    async readText(path) {
      try {
        return await readFile(join(folder, path), "utf8");
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw sourceUnreadable(join(folder, path), String(error), "Check the file's permissions.");
      }
    },
    async readRange(path, start, end) {
      let handle;
      try {
        handle = await open(join(folder, path), "r");
      } catch (error) {
        if (isNotFound(error)) return undefined;
        throw sourceUnreadable(join(folder, path), String(error), "Check the file's permissions.");
      }
      try {
        const buffer = new Uint8Array(end - start);
        const { bytesRead } = await handle.read(buffer, 0, end - start, start);
        return buffer.subarray(0, bytesRead);
      } finally {
        await handle.close();
      }
    },
    async list() {
      const files: string[] = [];
      const walk = async (directory: string, depth: number): Promise<void> => {
        for (const entry of await readdir(directory, { withFileTypes: true })) {
          const full = join(directory, entry.name);
          if (entry.isDirectory() && depth < 2 && !entry.name.startsWith(".")) await walk(full, depth + 1);
          else if (entry.isFile()) files.push(relative(folder, full));
        }
      };
      await walk(folder, 0);
      return files;
    },
  };
}

export async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

export async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

/**
 * Reads up to `limit` bytes of a response body and cancels the rest: a
 * mirror that ignores Range must not make us download a 5 GB shard to read
 * its header.
 */
async function readAtMost(response: Response, limit: number): Promise<Uint8Array> {
  const reader = response.body?.getReader();
  if (!reader) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let received = 0;
  while (received < limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    received += value.length;
  }
  await reader.cancel().catch(() => undefined);
  const all = new Uint8Array(received);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return all.subarray(0, Math.min(limit, received));
}

/**
 * fetch with a deadline per request: a mirror that accepts the connection
 * and never answers must fail the plan or the source check with a reason,
 * not hang the command that asked.
 */
export function fetchWithin(timeoutMs: number | undefined): typeof fetch {
  if (timeoutMs === undefined) return fetch;
  return (input, init) => fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, AbortSignal.timeout(timeoutMs)]) : AbortSignal.timeout(timeoutMs) });
}

/** Why a request got no answer, as a person fixes it: a name that does not resolve, a refused port, a deadline. */
export function connectionFailure(error: unknown, timeoutMs: number | undefined): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown }).code;
  const name = (error as { name?: unknown }).name;
  if (name === "TimeoutError" || (cause as { name?: unknown }).name === "TimeoutError") return `no answer within ${Number(((timeoutMs ?? 0) / 1000).toFixed(1))} s`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `the host name does not resolve (${String(code)})`;
  if (code === "ECONNREFUSED") return "connection refused: nothing listens at that address and port";
  if (code === "ECONNRESET") return "the connection was reset";
  return `could not connect (${cause instanceof Error ? cause.message : String(cause)})`;
}

/**
 * What to do about a connection that failed, following its cause: a refused
 * connection or a name that does not resolve is not helped by advice about
 * the file's contents.
 */
export function connectionHint(error: unknown, what = "the host"): string {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = (cause as { code?: unknown }).code;
  const name = (error as { name?: unknown }).name;
  if (name === "TimeoutError" || (cause as { name?: unknown }).name === "TimeoutError") return `Check that ${what} is up and reachable from the server (a firewall may drop the connection).`;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return `Correct the host name in the source, or check the server's DNS.`;
  if (code === "ECONNREFUSED") return `Start ${what}, or correct the address and port in the source.`;
  return `Check the address and port in the source and that ${what} is reachable from the server.`;
}

/** A folder on an HTTP(S) mirror: files at BASE/path, Range requests for headers. */
export function httpFolderFiles(baseUrl: string, headers: Record<string, string> = {}, timeoutMs?: number): ModelFiles {
  const fetchOnce = fetchWithin(timeoutMs);
  const base = baseUrl.endsWith("/") ? baseUrl : `${baseUrl}/`;
  const get = async (path: string, range?: [number, number]): Promise<Response | undefined> => {
    const url = new URL(path, base).toString();
    let response: Response;
    try {
      const target = withUrlCredentials(url, { ...headers, ...(range ? { Range: `bytes=${range[0]}-${range[1] - 1}` } : {}) });
      response = await fetchOnce(target.url, { headers: target.headers });
    } catch (error) {
      throw sourceUnreadable(redactUrl(url), connectionFailure(error, timeoutMs), connectionHint(error, "the mirror"));
    }
    if (response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw sourceUnreadable(redactUrl(url), `the mirror answered ${response.status}`, response.status === 401 || response.status === 403 ? "The mirror wants credentials: put them in the URL (https://user:password@mirror/...) or configure the hub token." : "Check the mirror URL.");
    }
    return response;
  };
  return {
    description: base,
    async readText(path) {
      const response = await get(path);
      return response ? await response.text() : undefined;
    },
    async readRange(path, start, end) {
      const response = await get(path, [start, end]);
      if (!response) return undefined;
      if (response.status === 206) return new Uint8Array(await response.arrayBuffer());
      // The server ignored Range and sent the whole file: take the slice we need.
      const bytes = await readAtMost(response, end);
      return bytes.subarray(start, end);
    },
    async list() {
      return undefined;
    },
  };
}

export interface HubOptions {
  readonly hubEndpoint?: string;
  readonly hubToken?: string;
  /** A deadline for each request to a hub or mirror; none when left out. */
  readonly requestTimeoutMs?: number;
  /** Where the person sets the endpoint and token, for failure hints: the server reads server.yaml, the CLI its flags and environment. */
  readonly hubSettings?: HubSettingNames;
}

export interface HubSettingNames {
  readonly endpoint: string;
  readonly token: string;
}

/** The server's: a hint naming --hub-endpoint to someone whose server did the reading would send them to the wrong machine. */
export const serverHubSettings: HubSettingNames = { endpoint: "server.yaml huggingface.endpoint", token: "server.yaml huggingface.token_env" };

export const defaultHubEndpoint = "https://huggingface.co";

/**
 * A model repository on the Hugging Face hub, or on a mirror that answers
 * like it, read through @huggingface/hub (tree listing, resolve with Range).
 * The token travels in our own fetch wrapper rather than as `accessToken`,
 * because the library insists on the "hf_" prefix and mirrors issue others.
 */
export function hubFiles(repository: string, revision: string, options: HubOptions): ModelFiles {
  const hubUrl = (options.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "");
  const token = options.hubToken;
  const fetchOnce = fetchWithin(options.requestTimeoutMs);
  const settings = options.hubSettings ?? serverHubSettings;
  const authorizedFetch: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (token) headers.set("Authorization", `Bearer ${token}`);
    return fetchOnce(input, { ...init, headers });
  };
  const repo = { type: "model" as const, name: repository };
  const description = `${repository}@${revision} via ${hubUrl}`;
  const fail = (path: string | undefined, error: unknown): DomainError => {
    const status = (error as { statusCode?: unknown }).statusCode;
    const what = path ? `${path} of ${description}` : description;
    if (status === 401 || status === 403) {
      return sourceUnreadable(what, `the hub answered ${status}`, `The repository is gated or private: set the hub token (${settings.token}) and accept its licence.`);
    }
    if (status === 404) return sourceUnreadable(what, "not found on the hub", "Check the model id and revision (Org/Name@revision).");
    return sourceUnreadable(what, connectionFailure(error, options.requestTimeoutMs), `Check the hub endpoint (${settings.endpoint}) and that it is reachable.`);
  };
  const blob = async (path: string): Promise<Blob | undefined> => {
    try {
      return (await downloadFile({ repo, path, revision, hubUrl, fetch: authorizedFetch, xet: false })) ?? undefined;
    } catch (error) {
      if ((error as { statusCode?: unknown }).statusCode === 404) return undefined;
      throw fail(path, error);
    }
  };
  return {
    description,
    async readText(path) {
      const file = await blob(path);
      try {
        return file ? await file.text() : undefined;
      } catch (error) {
        throw fail(path, error);
      }
    },
    async readRange(path, start, end) {
      const file = await blob(path);
      if (!file) return undefined;
      try {
        return new Uint8Array(await file.slice(start, end).arrayBuffer());
      } catch (error) {
        throw fail(path, error);
      }
    },
    async list() {
      const paths: string[] = [];
      try {
        for await (const entry of listFiles({ repo, revision, hubUrl, recursive: true, fetch: authorizedFetch })) {
          if (entry.type === "file") paths.push(entry.path);
        }
      } catch (error) {
        throw fail(undefined, error);
      }
      return paths;
    },
  };
}
