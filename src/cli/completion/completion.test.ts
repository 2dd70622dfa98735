import { execFileSync, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type RunningServer } from "../../server/start-server.js";
import { buildProgram } from "../program.js";
import { modelNamesForCompletion } from "./completion-command.js";
import { completionScript, completionShells } from "./completion-scripts.js";
import { completionSpec } from "./completion-spec.js";
import { shippedPresets } from "../../catalog/presets/shipped-presets.js";

const entries = completionSpec(buildProgram());
let folder: string;

beforeAll(async () => {
  folder = await mkdtemp(path.join(os.tmpdir(), "llmgw-completion-"));
  for (const shell of completionShells) await writeFile(path.join(folder, `llmgw.${shell}`), completionScript(shell, entries, { presets: shippedPresets().map((preset) => preset.name) }));
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

/**
 * What bash offers after the words typed, the last one being completed, as
 * readline would ask it: COMP_WORDS and COMP_CWORD set, the function called.
 * `models` stands in for the server's answer to `llmgw __complete models`.
 */
function bashCandidates(typed: string[], models: string[] = []): string[] {
  const answer = `printf '%s\\n' ${models.map((name) => `'${name}'`).join(" ")}`;
  const script = [
    `source ${JSON.stringify(path.join(folder, "llmgw.bash"))}`,
    `llmgw() { if [ "$1" = __complete ]; then ${answer}; fi; }`,
    // npx answers only as npx --no-install llmgw: a TAB must never make npx fetch a package.
    `npx() { if [ "$*" = "--no-install llmgw __complete models" ]; then ${answer}; fi; }`,
    `COMP_WORDS=(${typed.map((word) => `'${word}'`).join(" ")})`,
    `COMP_CWORD=${typed.length - 1}`,
    // What bash runs is what the script registered for the first word.
    `$(complete -p ${typed[0]} | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')`,
    `printf '%s\\n' "\${COMPREPLY[@]}"`,
  ].join("\n");
  return execFileSync("bash", ["-c", script], { encoding: "utf8" }).split("\n").filter((line) => line !== "");
}

function installed(shell: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${shell}`]).status === 0;
}

describe("llmgw completion bash, sourced in a real bash", () => {
  it("completes `llmgw ctl mo<TAB>` to the ctl commands starting with mo", () => {
    expect(bashCandidates(["llmgw", "ctl", "mo"]).sort()).toEqual(["model", "models"]);
  });

  it("completes the subcommands of llmgw from the command tree", () => {
    expect(bashCandidates(["llmgw", ""])).toEqual(expect.arrayContaining(["demo", "server", "agent", "gateway", "ctl", "completion"]));
    expect(bashCandidates(["llmgw", ""])).not.toContain("__complete");
  });

  it("completes options of the command the words name, past options that take a value", () => {
    expect(bashCandidates(["llmgw", "ctl", "--server", "http://x:8080", "model", "add", "--w"])).toEqual(["--wait"]);
    expect(bashCandidates(["llmgw", "ctl", "--s"])).toEqual(["--server"]);
  });

  it("completes a model's name where a command takes one, from the server's answer", () => {
    expect(bashCandidates(["llmgw", "ctl", "model", "show", "q"], ["qwen2.5-7b", "llama-3.1-8b", "qwen-sql"]).sort()).toEqual(["qwen-sql", "qwen2.5-7b"]);
    expect(bashCandidates(["llmgw", "ctl", "restart", "--model", ""], ["chat"])).toEqual(["chat"]);
    expect(bashCandidates(["llmgw", "ctl", "model", "show", "chat", ""], ["chat"]), "only the first argument is a model").toEqual([]);
  });

  it("offers the shipped presets after `ctl model add`, with no server to ask", () => {
    const qwen = shippedPresets().map((preset) => preset.name).filter((name) => name.startsWith("qwen"));
    expect(qwen.length).toBeGreaterThan(0);
    expect(bashCandidates(["llmgw", "ctl", "model", "add", "qwen"], []).sort()).toEqual(qwen.sort());
    expect(bashCandidates(["llmgw", "ctl", "model", "add", "--name", "x", ""], ["chat"])).toEqual(expect.arrayContaining(qwen));
  });

  it("completes `npx llmgw` as it completes llmgw, asking the server through npx without installing anything", () => {
    expect(bashCandidates(["npx", "llmgw", "ctl", "mo"]).sort()).toEqual(["model", "models"]);
    expect(bashCandidates(["npx", "llm"])).toEqual(["llmgw"]);
    expect(bashCandidates(["npx", "llmgw", "ctl", "model", "show", "q"], ["qwen2.5-7b", "llama-3.1-8b"])).toEqual(["qwen2.5-7b"]);
    expect(bashCandidates(["npx", "llmgw", "ctl", "model", "add", "qwen"]).length).toBeGreaterThan(0);
  });

  it("offers nothing for a model's name when the server does not answer", () => {
    expect(bashCandidates(["llmgw", "ctl", "model", "show", ""], [])).toEqual([]);
  });
});

describe("each shell's script", () => {
  it.each(completionShells)("%s: parses in its shell (where the shell is installed)", (shell) => {
    if (shell !== "bash" && !installed(shell)) return;
    const file = path.join(folder, `llmgw.${shell}`);
    const check = shell === "fish" ? spawnSync("fish", ["--no-execute", file]) : spawnSync(shell, ["-n", file]);
    expect(check.stderr.toString(), `${shell} -n on the script`).toBe("");
    expect(check.status).toBe(0);
  });

  it("zsh completes `npx llmgw ctl mo` through the same functions (where zsh is installed)", () => {
    if (!installed("zsh")) return;
    const answer = spawnSync("zsh", ["-c", `autoload -U compinit && compinit -u; source ${path.join(folder, "llmgw.zsh")}; COMP_WORDS=(npx llmgw ctl mo); COMP_CWORD=3; _llmgw_npx; print -l -- $COMPREPLY`], { encoding: "utf8" });
    expect(answer.stdout.split("\n").filter(Boolean).sort()).toEqual(["model", "models"]);
  });

  it("fish completes `llmgw ctl mo` to model and models (where fish is installed)", () => {
    if (!installed("fish")) return;
    const answer = spawnSync("fish", ["-c", `source ${path.join(folder, "llmgw.fish")}; complete -C 'llmgw ctl mo'`], { encoding: "utf8" });
    expect(answer.stdout.split("\n").map((line) => line.split("\t")[0]).filter(Boolean).sort()).toEqual(["model", "models"]);
  });
});

describe("model names for completion", () => {
  let dataDir: string;
  let server: RunningServer;

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), "llmgw-completion-server-"));
    const config = path.join(dataDir, "server.yaml");
    await writeFile(config, "models:\n  - name: gpt-4o\n    aliases: [chat]\n    external: { base_url: 'https://api.example/v1', api_key_env: NO_SUCH_KEY }\n");
    server = await startServer({ configPath: config, dataDir, listen: "127.0.0.1:0", logger: false });
  });

  afterAll(async () => {
    await server.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("are the catalog's names and aliases, read from the server", async () => {
    expect(await modelNamesForCompletion({ server: server.url, token: server.createdAdminToken?.token as string })).toEqual(["gpt-4o", "chat"]);
  });

  it("are none when no server answers", async () => {
    expect(await modelNamesForCompletion({ server: "http://127.0.0.1:9", token: "x" })).toEqual([]);
  });
});
