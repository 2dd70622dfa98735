import { existsSync } from "node:fs";
import path from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance, FastifyReply } from "fastify";
import { segmentTooLong, maxParamLength } from "../../http/index.js";

/**
 * The console's policy, sent with every page and file of it. Scripts come
 * only from this server, so an injected `<script>` or a `javascript:` URL
 * never runs; styles allow 'unsafe-inline' because the component library
 * and the YAML editor (CodeMirror) write their CSS into `<style>` tags at run
 * time (CSS-in-JS), and a style cannot run code or reach another origin under
 * `connect-src 'self'`. No nonce instead: a nonce in style-src makes browsers
 * ignore 'unsafe-inline', and the component library's tags carry none.
 * `data:` and `blob:` images are the charts' and the playground's images.
 */
export const consoleContentSecurityPolicy = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data: blob:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

/** Vite names every file under assets/ by its content's hash: a changed file is a new name, so it may be kept for a year. */
const hashedAssetCache = "public, max-age=31536000, immutable";

/** Paths that belong to the APIs and never fall back to the page: an unknown one is a 404 in the API's shape. */
function isApiPath(pathname: string): boolean {
  return pathname === "/v1" || pathname.startsWith("/v1/") || pathname === "/api" || pathname.startsWith("/api/") || pathname === "/metrics" || pathname === "/healthz";
}

/** A last segment with a dot asks for a file (app.js, favicon.ico); without one it is a page of the console's router. */
function asksForFile(pathname: string): boolean {
  // The console's files sit at its top level or under /assets/; a deeper page path may hold a dot in a name (/models/qwen2.5-7b).
  // A path climbing out of the folder goes to the file sender, which refuses it.
  if (pathname.startsWith("/assets/") || pathname.includes("/..")) return true;
  return pathname.lastIndexOf("/") === 0 && pathname.includes(".");
}

/** Where `npm run build` writes the console, found from the package so it works from src/ and dist/. */
export function defaultConsoleDirectory(packageDirectory: string): string {
  return path.join(packageDirectory, "dist", "console");
}

const notBuiltPage = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>llmgw console not built</title></head>
<body>
<h1>The llmgw console is not built</h1>
<p>This server serves the web console from <code>dist/console/</code>, and that folder has no <code>index.html</code>.</p>
<p>In a clone of llmgw, run <code>npm run build</code> (or <code>npm ci</code>, which builds it), then reload this page.
The admin API at <code>/api/v1</code> and the gateway at <code>/v1</code> work without it.</p>
</body>
</html>
`;

function consoleHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header("content-security-policy", consoleContentSecurityPolicy)
    .header("x-content-type-options", "nosniff")
    .header("referrer-policy", "no-referrer")
    .header("vary", "accept-encoding");
}

/**
 * Serves the web console at `/` on the server's own port: its files from
 * `directory`, and `index.html` for every other page path so a reloaded or
 * shared URL of the console's router opens the page. These routes need no
 * token (the page asks for one and sends it to /api/v1 itself); unknown
 * paths under /api keep the API's access check and its 404.
 */
export async function registerConsoleFiles(app: FastifyInstance, directory: string): Promise<void> {
  // serve: false: the routes below decide which file answers (and the fallback to index.html); the plugin only sends.
  await app.register(fastifyStatic, {
    root: directory,
    serve: false,
    preCompressed: true,
    cacheControl: false,
    dotfiles: "deny",
    index: false,
  });

  const sendIndex = (reply: FastifyReply) => {
    consoleHeaders(reply).header("cache-control", "no-cache");
    if (!existsSync(path.join(directory, "index.html"))) return reply.type("text/html; charset=utf-8").send(notBuiltPage);
    return reply.sendFile("index.html");
  };

  // Read tokens reach the 404 of an unknown API path as before, and no token still answers 401.
  app.get("/api/*", { config: { access: "read" } }, (request, reply) => {
    const pathname = request.url.split("?")[0] ?? "";
    if (pathname.split("/").some((segment) => segment.length > maxParamLength)) throw segmentTooLong(pathname);
    return reply.callNotFound();
  });

  app.get("/*", { config: { access: "public" } }, (request, reply) => {
    const pathname = decodeURIComponentSafely(request.url.split("?")[0] ?? "/");
    if (pathname === undefined || isApiPath(pathname)) return reply.callNotFound();
    if (!asksForFile(pathname)) return sendIndex(reply);
    consoleHeaders(reply).header("cache-control", pathname.startsWith("/assets/") ? hashedAssetCache : "no-cache");
    // send refuses a path that leaves the root (403) and dotfiles; a file that is not there is the API's 404.
    return reply.sendFile(pathname.slice(1));
  });
}

function decodeURIComponentSafely(text: string): string | undefined {
  try {
    return decodeURIComponent(text);
  } catch {
    return undefined;
  }
}
