import { listFiles } from "@huggingface/hub";
import { redactUrl, type WeightsSource } from "../../catalog/for-agent.js";
import { selectHubFiles } from "../weights-source.js";
import type { FetchWeightsOptions, RemoteFile } from "./fetch-options.js";
import { maxListedFiles } from "./list-http-folder.js";
import { unavailable } from "./remote-requests.js";

export async function listHubFiles(source: Extract<WeightsSource, { kind: "hub" }>, options: FetchWeightsOptions): Promise<{ files: RemoteFile[]; singleFile: boolean }> {
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
