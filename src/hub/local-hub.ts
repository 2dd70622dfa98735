/**
 * A local stand-in for the Hugging Face hub and for a plain HTTP mirror, for
 * `llmgw demo` (which has no internet, yet plans the presets' real hf://
 * sources) and for the tests of every reader of the hub,
 * answering the endpoints @huggingface/hub calls (read from its source):
 * - GET /api/models/ORG/NAME/tree/REVISION?recursive=…  (listFiles)
 * - GET|HEAD /ORG/NAME/resolve/REVISION/PATH with Range (downloadFile,
 *   fileDownloadInfo's "bytes=0-0" probe, WebBlob slices); a missing file is
 *   404 with X-Error-Code: EntryNotFound;
 * - GET /api/models/ORG/NAME/revision/REVISION  (the commit a branch, tag or
 *   sha stands for: { id, sha }), 404 with X-Error-Code: RevisionNotFound;
 * and, for mirror URLs, GET /mirror/PATH with Range.
 * A repository is one folder served at every revision, or several commits
 * (sha → folder) with branches naming them, where an unknown revision is 404.
 * Listens on 127.0.0.1, port 0.
 */
import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";

export interface HubServer {
  readonly url: string;
  /** Every request path seen, for assertions on what was fetched. */
  readonly requests: string[];
  close(): Promise<void>;
}

/** A repository with history: its commits (sha → folder) and its branches (name → sha). */
export interface HubRepositoryHistory {
  readonly commits: Readonly<Record<string, string>>;
  readonly branches: Readonly<Record<string, string>>;
}

export interface HubServerOptions {
  /** "Org/Name" → a local folder served at every revision, or a history of commits. */
  readonly repositories: Readonly<Record<string, string | HubRepositoryHistory>>;
  /** Folder served under /mirror/. */
  readonly mirrorRoot?: string;
  /** When set, every request must carry `Authorization: Bearer TOKEN`. */
  readonly token?: string;
  /** When set, a Basic login ("user:password") is accepted in place of the token, as a private mirror asks. */
  readonly basicLogin?: string;
}

async function listRecursive(folder: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (directory: string): Promise<void> => {
    for (const entry of await readdir(directory, { withFileTypes: true })) {
      const full = join(directory, entry.name);
      if (entry.isDirectory()) await walk(full);
      else out.push(relative(folder, full));
    }
  };
  await walk(folder);
  return out;
}

async function sendFile(request: FastifyRequest, reply: FastifyReply, path: string, hubStyle: boolean): Promise<FastifyReply> {
  let size: number;
  try {
    const info = await stat(path);
    if (!info.isFile()) throw new Error("not a file");
    size = info.size;
  } catch {
    if (hubStyle) reply.header("X-Error-Code", "EntryNotFound");
    return reply.code(404).send({ error: "Entry not found" });
  }
  const etag = `"${createHash("sha1").update(path).digest("hex")}"`;
  reply.header("ETag", etag).header("Accept-Ranges", "bytes");
  const range = /^bytes=(\d+)-(\d*)$/.exec(String(request.headers.range ?? ""));
  // Streamed, never read whole: the demo's ComfyUI files are sparse files of their published size (gigabytes).
  if (range) {
    const start = Number(range[1]);
    const end = Math.min(range[2] ? Number(range[2]) : size - 1, size - 1);
    if (start >= size) return reply.code(416).header("Content-Range", `bytes */${size}`).send();
    reply.code(206).header("Content-Range", `bytes ${start}-${end}/${size}`).header("Content-Type", "application/octet-stream").header("Content-Length", end - start + 1);
    return reply.send(request.method === "HEAD" ? undefined : createReadStream(path, { start, end }));
  }
  reply.header("Content-Type", "application/octet-stream").header("Content-Length", size);
  return reply.send(request.method === "HEAD" ? undefined : createReadStream(path));
}

/** The commit a revision names: a branch, a full sha, or a sha's first 7 or more characters. */
function commitOf(history: HubRepositoryHistory, revision: string): string | undefined {
  const branch = history.branches[revision];
  if (branch !== undefined) return branch;
  if (revision.length < 7) return undefined;
  return Object.keys(history.commits).find((sha) => sha.startsWith(revision));
}

type Found = { folder: string; sha: string } | { missing: "RepoNotFound" | "RevisionNotFound" };

function findRevision(options: HubServerOptions, repository: string, revision: string): Found {
  const entry = options.repositories[repository];
  if (entry === undefined) return { missing: "RepoNotFound" };
  if (typeof entry === "string") return { folder: entry, sha: createHash("sha1").update(`${repository}@${revision}`).digest("hex") };
  const sha = commitOf(entry, revision);
  const folder = sha === undefined ? undefined : entry.commits[sha];
  return sha === undefined || folder === undefined ? { missing: "RevisionNotFound" } : { folder, sha };
}

export async function startHubServer(options: HubServerOptions): Promise<HubServer> {
  // A client that keeps its connection open (a server's pooled reader) must not hold up close: the demo and the tests stop it at once.
  const app = Fastify({ logger: false, forceCloseConnections: true });
  const notFound = (reply: FastifyReply, code: "RepoNotFound" | "RevisionNotFound") =>
    reply.code(404).header("X-Error-Code", code).send({ error: code === "RepoNotFound" ? "Repository not found" : "Invalid rev id" });
  const requests: string[] = [];
  app.addHook("onRequest", async (request, reply) => {
    requests.push(request.url);
    const basic = options.basicLogin ? `Basic ${Buffer.from(options.basicLogin).toString("base64")}` : undefined;
    if (options.token && request.headers.authorization !== `Bearer ${options.token}` && request.headers.authorization !== basic) {
      await reply.code(401).send({ error: "Invalid credentials in Authorization header" });
    }
  });
  app.get<{ Params: { org: string; name: string; revision: string } }>("/api/models/:org/:name/revision/:revision", async (request, reply) => {
    const repository = `${request.params.org}/${request.params.name}`;
    const found = findRevision(options, repository, request.params.revision);
    if ("missing" in found) return notFound(reply, found.missing);
    return { id: repository, modelId: repository, sha: found.sha };
  });
  app.get<{ Params: { org: string; name: string; revision: string } }>("/api/models/:org/:name/tree/:revision", async (request, reply) => {
    const found = findRevision(options, `${request.params.org}/${request.params.name}`, request.params.revision);
    if ("missing" in found) return notFound(reply, found.missing);
    const folder = found.folder;
    const files = await listRecursive(folder);
    return Promise.all(
      files.map(async (path) => ({ type: "file", path, size: (await stat(join(folder, path))).size, oid: createHash("sha1").update(path).digest("hex") })),
    );
  });
  const resolveHandler = async (request: FastifyRequest<{ Params: { org: string; name: string; revision: string; "*": string } }>, reply: FastifyReply) => {
    const found = findRevision(options, `${request.params.org}/${request.params.name}`, request.params.revision);
    if ("missing" in found) return notFound(reply, found.missing);
    return sendFile(request, reply, join(found.folder, decodeURIComponent(request.params["*"])), true);
  };
  app.route({ method: ["GET", "HEAD"], url: "/:org/:name/resolve/:revision/*", handler: resolveHandler });
  if (options.mirrorRoot) {
    const root = options.mirrorRoot;
    app.route({
      method: ["GET", "HEAD"],
      url: "/mirror/*",
      handler: async (request: FastifyRequest<{ Params: { "*": string } }>, reply) => sendFile(request, reply, join(root, decodeURIComponent(request.params["*"])), false),
    });
  }
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  return { url: address, requests, close: () => app.close() };
}
