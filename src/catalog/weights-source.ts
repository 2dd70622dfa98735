import path from "node:path";
import { DomainError } from "../errors/light.js";
import { redactUrl } from "./redact.js";

/**
 * The one grammar of a weights source: a profile's or an adapter's `source`,
 * `origin`, and what `ctl model plan` takes. The planner, the source check and
 * the agent parse the same strings with this function, so a source the
 * planner read is one the agent can fetch.
 *
 *   https://host/model.gguf[#sha256=HEX]    one file
 *   https://host/models/llama/               a folder (fetched from its listing or index)
 *   hf://org/name[@revision][/path]          a Hugging Face repository, or one file or folder in it
 *   org/name[@revision]                      the same repository, as the hub writes it
 *   mirror:path/in/mirror[/]                 a file or folder under server.yaml's `mirror`
 *   /srv/models/llama, ./x, file:///x        a path on the machine that reads it
 *
 * A relative path is written with ./ (or ../): a bare `a/b` is a hub id.
 */
export type WeightsSource =
  | { readonly kind: "http-file"; readonly url: string; readonly sha256: string | undefined }
  | { readonly kind: "http-folder"; readonly url: string }
  | { readonly kind: "hub"; readonly repo: string; readonly revision: string; readonly path: string }
  | { readonly kind: "local"; readonly path: string };

export interface SourceContext {
  /** server.yaml's `mirror`: an http(s) URL or a path; `mirror:` sources resolve against it. */
  readonly mirror?: string | undefined;
}

const hubIdPattern = /^([A-Za-z0-9][A-Za-z0-9._-]*)\/([A-Za-z0-9][A-Za-z0-9._-]*)(?:@([A-Za-z0-9._-]+))?$/;

export const sourceGrammarHint =
  "Give an http(s) URL (a folder ends in /), hf://org/name@revision (or org/name@revision), mirror:path, or a path (absolute, or starting with ./).";

function invalidSource(source: string, why: string, hint = sourceGrammarHint): DomainError {
  return new DomainError("invalid_input", `source "${redactUrl(source)}" ${why}`, hint);
}

export function parseWeightsSource(source: string, context: SourceContext = {}): WeightsSource {
  if (source.startsWith("mirror:")) return parseWeightsSource(resolveMirror(source, context), {});
  if (/^https?:\/\//i.test(source)) {
    let url: URL;
    try {
      url = new URL(source);
    } catch {
      throw invalidSource(source, "is not a valid URL");
    }
    // A #sha256=HEX fragment (as pip does) pins the file's content when the server publishes no checksum.
    const fragment = /^#sha256=([0-9a-fA-F]{64})$/.exec(url.hash);
    if (url.hash !== "" && !fragment) throw invalidSource(source, "has a fragment other than #sha256=<64 hex digits>");
    url.hash = "";
    if (url.pathname.endsWith("/")) return { kind: "http-folder", url: url.toString() };
    return { kind: "http-file", url: url.toString(), sha256: fragment?.[1]?.toLowerCase() };
  }
  if (source.startsWith("hf://")) {
    const segments = source.slice("hf://".length).split("/").filter((segment) => segment.length > 0);
    const [owner, nameAndRevision, ...rest] = segments;
    if (owner === undefined || nameAndRevision === undefined) throw invalidSource(source, "does not name a repository as hf://org/name");
    const at = nameAndRevision.indexOf("@");
    const name = at === -1 ? nameAndRevision : nameAndRevision.slice(0, at);
    const revision = at === -1 ? "main" : nameAndRevision.slice(at + 1);
    if (name.length === 0 || revision.length === 0) throw invalidSource(source, "has an empty name or revision");
    if (rest.some((segment) => segment === "..")) throw invalidSource(source, "climbs out of the repository with ..");
    return { kind: "hub", repo: `${owner}/${name}`, revision, path: rest.join("/") };
  }
  const hubId = hubIdPattern.exec(source);
  if (hubId) return { kind: "hub", repo: `${hubId[1]}/${hubId[2]}`, revision: hubId[3] ?? "main", path: "" };
  if (source.startsWith("file://")) return { kind: "local", path: new URL(source).pathname };
  if (/^[a-z][a-z0-9+.-]*:/i.test(source) && !/^[A-Za-z]:[\\/]/.test(source)) throw invalidSource(source, "uses a scheme llmgw cannot fetch");
  return { kind: "local", path: path.resolve(source) };
}

/**
 * The source as an agent is sent it: `mirror:path` joined to the server's
 * mirror (an absolute URL or path), any other form as written. Agents do not
 * read server.yaml, so a `mirror:` source reaching one could not be fetched.
 */
export function sourceForAgents(source: string, context: SourceContext): string {
  return source.startsWith("mirror:") ? resolveMirror(source, context) : source;
}

/** `mirror:path` against the configured mirror: a URL joins, a folder on disk joins as a path. */
function resolveMirror(source: string, context: SourceContext): string {
  const relative = source.slice("mirror:".length).replace(/^\/+/, "");
  if (relative === "" || relative.split("/").some((segment) => segment === "..")) {
    throw invalidSource(source, "must name a path inside the mirror (no .. segments)");
  }
  const mirror = context.mirror;
  if (mirror === undefined || mirror === "") {
    throw invalidSource(source, "names the mirror, but no mirror is configured", "Set `mirror:` in server.yaml to the mirror's base URL or folder, or give the source as a full URL.");
  }
  if (/^https?:\/\//i.test(mirror)) return new URL(relative, mirror.endsWith("/") ? mirror : `${mirror}/`).toString();
  return path.join(path.resolve(mirror), relative) + (relative.endsWith("/") ? "/" : "");
}

/** The source as a person reads it in a message, password masked. */
export function describeSource(source: WeightsSource): string {
  switch (source.kind) {
    case "http-file":
    case "http-folder":
      return redactUrl(source.url);
    case "hub":
      return `hf://${source.repo}@${source.revision}${source.path ? `/${source.path}` : ""}`;
    case "local":
      return source.path;
  }
}

/**
 * What is wrong with a source's form, or undefined: the catalog refuses a
 * source no agent could fetch when the model is added, not on a node later.
 * Whether a mirror is configured is settled where `mirror:` is resolved
 * (the server, with its configuration); here a stand-in mirror checks only
 * the form of the path.
 */
export function sourceFormProblem(source: string): string | undefined {
  try {
    parseWeightsSource(source, { mirror: "https://mirror.invalid/" });
    return undefined;
  } catch (error) {
    return error instanceof DomainError ? `${error.message.replace(/^source "[^"]*" /, "")}; ${sourceGrammarHint.replace(/^Give/, "give")}` : String(error);
  }
}
