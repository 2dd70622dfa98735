import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyModelGguf, writeGgufFile } from "../../src/engines/llama/tiny-gguf.js";
import type { NodeView } from "../../src/protocol/views.js";
import { waitFor } from "../support/fake-engine.js";
import { freePort, withoutLlmgwVariables } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * llmgw as users install it: `npm pack`'s tarball installed globally into a
 * fresh prefix with no dev dependencies, then that installed `llmgw` (not
 * this checkout's) runs the demo with the built-in llama.cpp answering a tiny
 * GGUF, a server with an agent that joins, the console and a gateway. One
 * install, several checks: the install is most of the time (CI runs this
 * after `npm test`, whose build it packs; see docs/installing.md for the
 * figures).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string; devDependencies: Record<string, string> };

let directory: string;
let prefix: string;
let llmgw: string;
let environment: Record<string, string | undefined>;
const children: ChildProcess[] = [];

function run(command: string, args: readonly string[], options: { cwd?: string; env?: Record<string, string | undefined> } = {}): string {
  const result = spawnSync(command, args, { cwd: options.cwd ?? directory, env: options.env ?? environment, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} exited ${result.status}:\n${result.stdout}\n${result.stderr}`);
  return result.stdout;
}

/** A long-running face of the installed llmgw, its output kept; in its own group so the test stops all it started. */
function start(args: readonly string[], extraEnvironment: Record<string, string> = {}): { child: ChildProcess; output: () => string } {
  const child = spawn(llmgw, args, { cwd: directory, env: { ...environment, ...extraEnvironment }, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
}

async function stop(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  process.kill(-(child.pid as number), signal);
  const done = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 30_000))]);
  if (!done) process.kill(-(child.pid as number), "SIGKILL");
}

beforeAll(() => {
  if (!existsSync(path.join(root, "dist", "console", "index.html")) || !existsSync(path.join(root, "dist", "src", "cli", "launch.js"))) {
    throw new Error("the package is packed from the build: run `npm run build` first");
  }
  directory = temporaryDirectory("llmgw-installed-");
  prefix = path.join(directory, "prefix");
  // The tests' own llmgw variables and npm's lifecycle variables must not reach the installed program.
  environment = { ...withoutLlmgwVariables(process.env), PATH: `${path.join(prefix, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}` };
  const started = Date.now();
  // --ignore-scripts: `prepare` would build again what CI built a moment ago.
  run("npm", ["pack", "--ignore-scripts", "--pack-destination", directory, "--silent"], { cwd: root });
  const tarball = readdirSync(directory).find((name) => name.endsWith(".tgz")) as string;
  expect(tarball).toBe(`llmgw-${manifest.version}.tgz`);
  const packed = Date.now();
  // better-sqlite3 is built from source (its prebuilt binary is on GitHub, beyond what CI reaches); npm's cache from `npm ci` serves the rest.
  run("npm", ["install", "--global", "--prefix", prefix, "--omit=dev", "--allow-scripts=better-sqlite3", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", path.join(directory, tarball)], {
    env: { ...environment, npm_config_build_from_source: "true" },
  });
  llmgw = path.join(prefix, "bin", "llmgw");
  process.stdout.write(`installed-package: npm pack ${((packed - started) / 1000).toFixed(0)} s, npm install -g ${((Date.now() - packed) / 1000).toFixed(0)} s\n`);
}, 1_200_000);

afterAll(async () => {
  for (const child of children) await stop(child, "SIGKILL");
});

describe("the package as users install it", () => {
  it("installs the llmgw command and reports the package's version", () => {
    expect(existsSync(llmgw)).toBe(true);
    expect(run(llmgw, ["--version"]).trim()).toBe(manifest.version);
    expect(run(llmgw, ["server", "--version"]).trim()).toBe(manifest.version);
  });

  it("installs no dev dependency: the console's libraries are built into dist/console", () => {
    const installed = path.join(prefix, "lib", "node_modules", "llmgw");
    expect(existsSync(path.join(installed, "dist", "console", "index.html"))).toBe(true);
    for (const name of ["react", "react-dom", "@mantine/core", "@codemirror/view", "vite", "vitest", "typescript", "openai"]) {
      expect(manifest.devDependencies[name], name).toBeDefined();
      expect(existsSync(path.join(installed, "node_modules", name)), `${name} was installed`).toBe(false);
    }
    expect(existsSync(path.join(installed, "node_modules", "node-llama-cpp"))).toBe(true);
    expect(existsSync(path.join(installed, "dist", "bench"))).toBe(false);
  });

  it("runs llmgw demo with a GGUF, which the built-in llama.cpp answers for real", async () => {
    const gguf = path.join(directory, "tiny.gguf");
    await writeGgufFile(gguf, tinyModelGguf());
    const demo = start(["demo", "--listen", "127.0.0.1:0", "--gguf", gguf]);
    await waitFor(() => demo.output().includes("Ctrl-C stops") || demo.child.exitCode !== null, 240_000, `the demo to be ready:\n${demo.output()}`, 250);
    expect(demo.output()).toContain("Ctrl-C stops");
    // The demo asked the GGUF one question through the gateway, and llama.cpp answered, not the simulated engine.
    expect(demo.output()).toMatch(/Asked tiny: "(?!Simulated)[^"]+"/);
    const [, url] = /export LLMGW_SERVER=(\S+)/.exec(demo.output()) ?? [];
    const answer = (await (
      await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "tiny", messages: [{ role: "user", content: "hello" }], max_tokens: 4 }) })
    ).json()) as { usage: { completion_tokens: number }; choices: { message: { content: string } }[] };
    expect(answer.usage.completion_tokens).toBe(4);
    expect(answer.choices[0]?.message.content).not.toContain("Simulated");
    await stop(demo.child, "SIGINT");
  }, 300_000);

  it("runs a server with an agent that joins, serves the console, and a gateway following it, each reporting its version", async () => {
    const port = await freePort();
    const dataDir = path.join(directory, "server-data");
    const server = start(["server", "--listen", `127.0.0.1:${port}`, "--data-dir", dataDir]);
    await waitFor(() => /listening on http/.test(server.output()), 60_000, `the server to listen:\n${server.output()}`);
    const url = `http://127.0.0.1:${port}`;
    const token = readFileSync(path.join(dataDir, "admin-token"), "utf8").trim();
    const ctl = (...args: string[]) => run(llmgw, ["ctl", "--server", url, "--token", token, ...args]);

    const version = (await (await fetch(`${url}/api/v1/version`)).json()) as { version: string };
    expect(version.version).toBe(manifest.version);
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script, html.slice(0, 500)).toBeDefined();
    expect((await fetch(`${url}${script}`)).status).toBe(200);

    const joinToken = (JSON.parse(ctl("node", "token", "--json")) as { token: string }).token;
    start(["agent", "--name", "node-a", "--data-dir", path.join(directory, "agent-data"), "--simulate", "1xL40S"], { LLMGW_SERVER: url, LLMGW_JOIN_TOKEN: joinToken });
    const joined = await waitFor(() => {
      const nodes = (JSON.parse(ctl("nodes", "--json")) as { nodes: NodeView[] }).nodes;
      return nodes.find((node) => node.name === "node-a" && node.state === "ready");
    }, 60_000, "the agent to join", 500);
    expect(joined.agent_version).toBe(manifest.version);
    expect(ctl("nodes")).toContain(`agent ${manifest.version}`);

    const gatewayPort = await freePort();
    const gateway = start(["gateway", "--listen", `127.0.0.1:${gatewayPort}`], { LLMGW_SERVER: url, LLMGW_TOKEN: token });
    const health = await waitFor(async () => {
      try {
        return (await (await fetch(`http://127.0.0.1:${gatewayPort}/healthz`)).json()) as { version: string };
      } catch {
        return undefined;
      }
    }, 60_000, `the gateway to answer:\n${gateway.output()}`, 250);
    expect(health.version).toBe(manifest.version);
  }, 240_000);
});
