/**
 * `npm run fuzz [-- --count N --seed S --seconds T]`: tries to break the
 * admin API and the agent endpoints of a real server, in this process, on
 * loopback. It sends mutated requests (a valid body with one part made
 * hostile, or no valid body at all) with admin, read, no and forged tokens,
 * and joins and heartbeats with a valid node credential; then it checks that
 * the stored state still reads. It prints how each kind of request was
 * answered, and every 500.
 *
 * Bounded: N requests (default 5,000) or T seconds (default 300), whichever
 * comes first. Requests that would make the server call an agent (starting,
 * stopping or reading the logs of a replica) are left out: a fuzzed node
 * address could point anywhere, and the harness stays on loopback.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import fc from "fast-check";
import { request } from "undici";
import { startServer } from "../src/server/start-server.js";
import { mutationsOf, validHeartbeat, validJoin, type AgentMessageBase } from "./fuzz/mutations.js";

interface FuzzRequest {
  /** The kind of request, for the table. */
  readonly kind: string;
  readonly method: "GET" | "POST" | "DELETE";
  readonly path: string;
  readonly token: "admin" | "read" | "node" | "forged" | "none";
  readonly body?: string;
}

const { values: options } = parseArgs({
  options: { count: { type: "string", default: "5000" }, seed: { type: "string", default: "1" }, seconds: { type: "string", default: "300" } },
});
const count = Number(options.count);
const seed = Number(options.seed);
const deadline = Date.now() + Number(options.seconds) * 1000;

const directory = mkdtempSync(path.join(tmpdir(), "llmgw-fuzz-"));
const server = await startServer({ dataDir: directory, listen: "127.0.0.1:0", logger: false });
const adminToken = server.createdAdminToken?.token ?? "";

async function send(method: string, url: string, token: string | undefined, body?: string): Promise<{ status: number; text: string }> {
  const response = await request(new URL(url, server.url), {
    method: method as "GET",
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { "content-type": "application/json" } : {}) },
    ...(body !== undefined ? { body } : {}),
    headersTimeout: 30_000,
    bodyTimeout: 30_000,
  });
  return { status: response.statusCode, text: await response.body.text() };
}

async function setUp(method: string, url: string, body: unknown, token: string | undefined = adminToken): Promise<Record<string, unknown>> {
  const answer = await send(method, url, token, JSON.stringify(body));
  if (answer.status >= 300) throw new Error(`fuzz set-up: ${method} ${url} answered ${answer.status}: ${answer.text}`);
  return JSON.parse(answer.text) as Record<string, unknown>;
}

// A catalog, a read token and a joined node to aim at.
const modelEntry = { name: "fuzz-model", context: 4096, profiles: [{ engine: "vllm", source: "hf://org/model@main", gpus: 1 }] };
await setUp("POST", "/api/v1/models", modelEntry);
const readToken = String((await setUp("POST", "/api/v1/tokens", { name: "fuzz-read", role: "read" })).token);
const joinToken = String((await setUp("POST", "/api/v1/node-tokens", {})).token);
// Port 9 (discard) on loopback: nothing the server is told about this node leads off the machine.
const base: AgentMessageBase = { joinToken, nodeName: "node-a", address: "http://127.0.0.1:9" };
const credential = String((await setUp("POST", "/api/v1/agent/join", validJoin(base), undefined)).credential);
const tokens = { admin: adminToken, read: readToken, node: credential, forged: "llmgw_admin_forged", none: undefined };

const names = fc.oneof(fc.constantFrom("fuzz-model", "node-a", "fuzz-ready", "missing", "a/b", "x".repeat(200), "", " ", "..", "%00"), fc.string({ maxLength: 40 }));
const segment = names.map((name) => encodeURIComponent(name));
const someToken = fc.constantFrom<FuzzRequest["token"]>("admin", "admin", "admin", "read", "none", "forged");
const json = (value: unknown) => JSON.stringify(value);
const notJson = fc.constantFrom("{", "", "null", "[]", '{"a":', "\u0000", "x".repeat(10_000));

const requests: fc.Arbitrary<FuzzRequest> = fc.oneof(
  mutationsOf(validJoin({ ...base, nodeName: "node-j" })).map((body): FuzzRequest => ({ kind: "POST join", method: "POST", path: "/api/v1/agent/join", token: "none", body: json(body) })),
  notJson.map((body): FuzzRequest => ({ kind: "POST join (not JSON)", method: "POST", path: "/api/v1/agent/join", token: "none", body })),
  { weight: 3, arbitrary: mutationsOf(validHeartbeat(base)).map((body): FuzzRequest => ({ kind: "POST heartbeat (node credential)", method: "POST", path: "/api/v1/agent/heartbeat", token: "node", body: json(body) })) },
  fc.tuple(mutationsOf(validHeartbeat(base)), fc.constantFrom<FuzzRequest["token"]>("none", "forged", "read")).map(([body, token]): FuzzRequest => ({ kind: "POST heartbeat (no credential)", method: "POST", path: "/api/v1/agent/heartbeat", token, body: json(body) })),
  fc.tuple(mutationsOf({ ...modelEntry, name: "fuzz-other" }), someToken).map(([body, token]): FuzzRequest => ({ kind: "POST models", method: "POST", path: "/api/v1/models", token, body: json(body) })),
  fc
    .tuple(segment, fc.constantFrom("scale", "resources", "class", "owner", "fallbacks"), someToken, fc.constantFrom<unknown>({ min: 1 }, { memory_gb: 8 }, { class: "critical" }, { owner: "team" }, { fallbacks: [] }))
    .chain(([name, change, token, valid]) => mutationsOf(valid as never).map((body): FuzzRequest => ({ kind: `POST models/:name/${change}`, method: "POST", path: `/api/v1/models/${name}/${change}`, token, body: json(body) }))),
  fc.tuple(segment, someToken).map(([name, token]): FuzzRequest => ({ kind: "DELETE models/:name", method: "DELETE", path: `/api/v1/models/${name === "fuzz-model" ? "fuzz-model-not" : name}`, token })),
  fc.tuple(fc.constantFrom("/api/v1/models", "/api/v1/nodes", "/api/v1/replicas", "/api/v1/audit", "/api/v1/tokens", "/api/v1/version", "/healthz"), someToken).map(([url, token]): FuzzRequest => ({ kind: `GET ${url}`, method: "GET", path: url, token })),
  fc.tuple(fc.constantFrom("models", "nodes", "replicas"), segment, someToken).map(([what, name, token]): FuzzRequest => ({ kind: `GET ${what}/:name`, method: "GET", path: `/api/v1/${what}/${name}`, token })),
  fc.tuple(fc.constantFrom("model", "node", "limit", "tail", "bogus"), segment, someToken).map(([key, value, token]): FuzzRequest => ({ kind: "GET replicas|audit ?query", method: "GET", path: `/api/v1/${key === "limit" ? "audit" : "replicas"}?${key}=${value}`, token })),
  fc.tuple(mutationsOf({ name: "fuzz-token", role: "read" }), someToken).map(([body, token]): FuzzRequest => ({ kind: "POST tokens", method: "POST", path: "/api/v1/tokens", token, body: json(body) })),
);

interface Row {
  total: number;
  byStatus: Map<number, number>;
}
const table = new Map<string, Row>();
const failures: { request: FuzzRequest; status: number; text: string }[] = [];
let sent = 0;
const started = Date.now();
for (const fuzz of fc.sample(requests, { numRuns: count, seed })) {
  if (Date.now() > deadline) break;
  let status: number;
  let text: string;
  try {
    ({ status, text } = await send(fuzz.method, fuzz.path, tokens[fuzz.token], fuzz.body));
  } catch (error) {
    status = 0; // the connection was reset or timed out: worse than a 500
    text = (error as Error).message;
  }
  sent += 1;
  const row = table.get(fuzz.kind) ?? { total: 0, byStatus: new Map<number, number>() };
  row.total += 1;
  row.byStatus.set(status, (row.byStatus.get(status) ?? 0) + 1);
  table.set(fuzz.kind, row);
  if (status >= 500 || status === 0) failures.push({ request: fuzz, status, text });
}
const seconds = (Date.now() - started) / 1000;

// The stored state must still read, whatever was accepted.
const afterwards = [];
for (const url of ["/api/v1/models", "/api/v1/nodes", "/api/v1/replicas", "/api/v1/nodes/node-a"]) afterwards.push({ url, status: (await send("GET", url, adminToken)).status });
await server.close();
rmSync(directory, { recursive: true, force: true });

const statuses = [...new Set([...table.values()].flatMap((row) => [...row.byStatus.keys()]))].sort((a, b) => a - b);
const lines = [
  `# llmgw fuzz: ${sent} requests in ${seconds.toFixed(1)} s (seed ${seed}), Node ${process.version}`,
  "",
  `| request | sent | ${statuses.map((status) => (status === 0 ? "reset" : String(status))).join(" | ")} |`,
  `| --- | ---: | ${statuses.map(() => "---:").join(" | ")} |`,
  ...[...table.entries()]
    .sort(([left], [right]) => left.localeCompare(right))
    .map(([kind, row]) => `| ${kind} | ${row.total} | ${statuses.map((status) => row.byStatus.get(status) ?? 0).join(" | ")} |`),
  `| **all** | ${sent} | ${statuses.map((status) => [...table.values()].reduce((sum, row) => sum + (row.byStatus.get(status) ?? 0), 0)).join(" | ")} |`,
  "",
  `Afterwards: ${afterwards.map((answer) => `GET ${answer.url} ${answer.status}`).join(", ")}.`,
  "",
  failures.length === 0 ? "No 500s and no reset connections." : `${failures.length} answers of 500 or a reset connection; the first ones:`,
  ...failures.slice(0, 10).map((failure) => `- ${failure.request.method} ${failure.request.path.slice(0, 120)} (${failure.request.kind}): ${failure.status} ${failure.text.slice(0, 300)}\n  body: ${(failure.request.body ?? "").slice(0, 300)}`),
  "",
];
process.stdout.write(lines.join("\n"));
process.exitCode = failures.length > 0 || afterwards.some((answer) => answer.status !== 200) ? 1 : 0;
