import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../support/fake-engine.js";
import { ctlOutput, llmgwBin, runCli, startServerProcess, withoutLlmgwVariables, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * The server, the agent and the gateway log to stdout, where journald and
 * `kubectl logs` collect them: `--log-format json` one JSON object a line,
 * `pretty` one readable line an entry. Each process is started here as the
 * built `llmgw` (npm test builds dist/ first) and its stdout read as an
 * operator's collector would.
 */

/** `2026-12-07T17:30:05.123Z INFO  `: how every pretty line starts. */
const prettyStart = String.raw`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z INFO  `;

interface Started {
  readonly child: ChildProcess;
  readonly stdout: () => string;
}

const children: ChildProcess[] = [];

function start(args: readonly string[], environment: Record<string, string> = {}): Started {
  const child = spawn(process.execPath, [llmgwBin, ...args], { env: { ...withoutLlmgwVariables(process.env), ...environment }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let stdout = "";
  child.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on("data", () => undefined);
  return { child, stdout: () => stdout };
}

/** The first stdout line matching `pattern`, waited for. */
async function lineOf(started: Started, pattern: RegExp, what: string): Promise<string> {
  return await waitFor(() => started.stdout().split("\n").find((line) => pattern.test(line)), 30_000, `${what}; stdout so far:\n${started.stdout()}`, 100);
}

/** pino's lines among what else a process prints (its startup summary): every one must parse. */
function jsonLines(text: string): Record<string, unknown>[] {
  return text
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

describe("llmgw server --log-format", () => {
  it("pretty: one readable line an entry, the request's fields as key=value", async () => {
    const server = await startServerProcess({ args: ["--log-level", "info", "--log-format", "pretty"] });
    try {
      expect(server.output()).toMatch(new RegExp(`^${prettyStart}Server listening at http://127\\.0\\.0\\.1:\\d+$`, "m"));
      expect((await fetch(`${server.url}/api/v1/models`)).status).toBe(401);
      const completed = await waitFor(() => server.output().split("\n").find((line) => line.includes("request completed")), 10_000, "the request's log line", 100);
      expect(completed).toMatch(new RegExp(`^${prettyStart}request completed reqId=\\S+ res\\.statusCode=401 responseTime=[\\d.]+$`));
      expect(server.output()).not.toMatch(/^\{/m);
    } finally {
      await server.stop();
    }
  });

  it("json: pino's JSON, a line each", async () => {
    const server = await startServerProcess({ args: ["--log-level", "info", "--log-format", "json"] });
    try {
      await fetch(`${server.url}/api/v1/models`);
      await waitFor(() => server.output().includes('"request completed"'), 10_000, "the request's log line", 100);
      const entries = jsonLines(server.output());
      expect(entries.find((entry) => String(entry.msg).startsWith("Server listening at"))).toMatchObject({ level: 30, pid: server.child.pid });
      expect(entries.find((entry) => entry.msg === "request completed")).toMatchObject({ level: 30, res: { statusCode: 401 } });
    } finally {
      await server.stop();
    }
  });
});

describe("llmgw agent and llmgw gateway --log-format", () => {
  let server: ServerProcess;
  let joinToken: string;
  let directory: string;

  beforeAll(async () => {
    directory = temporaryDirectory("llmgw-log-format-");
    server = await startServerProcess({ dataDir: path.join(directory, "server") });
    joinToken = (JSON.parse(await ctlOutput(server, ["node", "token", "--json"])) as { token: string }).token;
  });

  afterAll(async () => {
    await server?.stop();
  });

  const agent = (name: string, format: string) =>
    start(["agent", "--server", server.url, "--name", name, "--data-dir", path.join(directory, name), "--simulate", "1xH100-80GB", "--log-format", format], { LLMGW_JOIN_TOKEN: joinToken });
  const gateway = (format: string) => start(["gateway", "--server", server.url, "--listen", "127.0.0.1:0", "--auth", "open", "--log-level", "info", "--log-format", format], { LLMGW_TOKEN: server.token });

  it("agent, pretty: its join as a readable line", async () => {
    const started = agent("log-pretty", "pretty");
    const joined = await lineOf(started, /agent-joined/, "the agent's join");
    expect(joined).toMatch(new RegExp(`^${prettyStart}agent-joined name=llmgw-agent server=${server.url.replace(/\./g, "\\.")}/ node=log-pretty address=http://127\\.0\\.0\\.1:\\d+$`));
  });

  it("agent, json: its join as a JSON object", async () => {
    const started = agent("log-json", "json");
    await lineOf(started, /agent-joined/, "the agent's join");
    expect(jsonLines(started.stdout()).find((entry) => entry.msg === "agent-joined")).toMatchObject({ level: 30, name: "llmgw-agent", node: "log-json", server: `${server.url}/` });
  });

  it("gateway, pretty and json: where it listens, in each format", async () => {
    const pretty = gateway("pretty");
    expect(await lineOf(pretty, /Server listening at/, "the gateway's listening line")).toMatch(new RegExp(`^${prettyStart}Server listening at http://127\\.0\\.0\\.1:\\d+$`));
    const json = gateway("json");
    await lineOf(json, /Server listening at/, "the gateway's listening line");
    expect(jsonLines(json.stdout()).find((entry) => String(entry.msg).startsWith("Server listening at"))).toMatchObject({ level: 30, pid: json.child.pid });
  });
});

describe("a wrong --log-format or --log-level", () => {
  it.each([
    ["server", ["server", "--log-format", "xml"], "--log-format", "json, pretty"],
    ["agent", ["agent", "--server", "http://127.0.0.1:9", "--log-format", "text"], "--log-format", "json, pretty"],
    ["gateway", ["gateway", "--log-level", "loud"], "--log-level", "fatal, error, warn, info, debug, trace, silent"],
  ])("%s refuses it, naming the option and the values it takes", async (_process, args, option, allowed) => {
    const result = await runCli(args);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`option '${option} <`);
    expect(result.stderr).toContain(`Allowed choices are ${allowed}.`);
  });
});
