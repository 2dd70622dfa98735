import { stat } from "node:fs/promises";
import { redactUrl, parseWeightsSource, type SourceContext } from "../catalog/index.js";
import { withUrlCredentials } from "../net/index.js";
import { connectionFailure, defaultHubEndpoint, fetchWithin, sourceUnreadable, type HubOptions } from "./model-files.js";

/**
 * The size of one file a source names (a ComfyUI model's checkpoint, VAE or
 * text encoder), asked without reading it: a HEAD for a URL or a hub file
 * (the hub's `x-linked-size` is the LFS object's size when the answer is a
 * redirect to its CDN), a stat for a local path. Refuses a source that names
 * a folder or a whole repository: a ComfyUI loader reads one file.
 */
export async function readFileSize(source: string, options: HubOptions & SourceContext = {}): Promise<number> {
  const parsed = parseWeightsSource(source.trim(), options);
  switch (parsed.kind) {
    case "http-folder":
      throw sourceUnreadable(redactUrl(parsed.url), "is a folder (it ends in /), and a ComfyUI file is one file", "Give the URL of the file itself.");
    case "http-file":
      return await headSize(parsed.url, {}, options.requestTimeoutMs);
    case "hub": {
      if (parsed.path === "" || parsed.path.endsWith("/")) {
        throw sourceUnreadable(source, "names a repository or a folder in it, and a ComfyUI file is one file", "Name the file in the repository: hf://org/name@revision/path/file.safetensors.");
      }
      const url = `${(options.hubEndpoint ?? defaultHubEndpoint).replace(/\/+$/, "")}/${parsed.repo}/resolve/${encodeURIComponent(parsed.revision)}/${parsed.path}`;
      return await headSize(url, options.hubToken ? { Authorization: `Bearer ${options.hubToken}` } : {}, options.requestTimeoutMs);
    }
    case "local": {
      try {
        const found = await stat(parsed.path);
        if (!found.isFile()) throw sourceUnreadable(source, "is not a file on this machine", "Give the path of the file itself.");
        return found.size;
      } catch (error) {
        if ((error as { code?: unknown }).code === "ENOENT") throw sourceUnreadable(source, "no such file on this machine", "Give the path of a file that exists.");
        throw error;
      }
    }
  }
}

async function headSize(url: string, headers: Record<string, string>, timeoutMs: number | undefined): Promise<number> {
  const target = withUrlCredentials(url, headers);
  let response: Response;
  try {
    response = await fetchWithin(timeoutMs)(target.url, { method: "HEAD", headers: target.headers, redirect: "manual" });
    // The hub answers a file in LFS with a redirect whose own headers carry the size; a mirror's redirect is followed once.
    const linked = Number(response.headers.get("x-linked-size"));
    if (response.status >= 300 && response.status < 400 && Number.isSafeInteger(linked) && linked > 0) return linked;
    if (response.status >= 300 && response.status < 400) response = await fetchWithin(timeoutMs)(target.url, { method: "HEAD", headers: target.headers });
  } catch (error) {
    throw sourceUnreadable(redactUrl(url), connectionFailure(error, timeoutMs), "Check the URL and that it is reachable from here.");
  }
  if (response.status === 404) throw sourceUnreadable(redactUrl(url), "404: no such file", "Check the file's name and the revision.");
  if (response.status === 401 || response.status === 403) {
    throw sourceUnreadable(redactUrl(url), `${response.status}: access refused`, "A gated repository needs a token (server.yaml huggingface.token_env) that has accepted its licence.");
  }
  if (!response.ok) throw sourceUnreadable(redactUrl(url), `answered ${response.status}`, "Check the URL; the server did not serve the file.");
  const linked = Number(response.headers.get("x-linked-size"));
  if (Number.isSafeInteger(linked) && linked > 0) return linked;
  const length = Number(response.headers.get("content-length"));
  if (!Number.isSafeInteger(length) || length <= 0) throw sourceUnreadable(redactUrl(url), "answered without a size (no Content-Length)", "Serve the file with its Content-Length, or add with --no-source-check.");
  return length;
}
