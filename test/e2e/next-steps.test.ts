import { mkdirSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pasteInShell as shell, pathWithLlmgw } from "../support/paste-in-shell.js";
import { llmgwBin, runCli, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

const repositoryRoot = path.resolve(path.dirname(llmgwBin), "..");

describe("every printed next step runs as printed", () => {
  let searchPath: string;
  let elsewhere: string;
  let server: ServerProcess;

  beforeAll(async () => {
    searchPath = pathWithLlmgw();
    const root = temporaryDirectory("llmgw-next-");
    elsewhere = path.join(root, "work");
    mkdirSync(elsewhere);
    // A data dir that is not ./llmgw-data, with a space in it, as on a desktop.
    server = await startServerProcess({ cwd: elsewhere, dataDir: path.join(root, "state dir", "llmgw") });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("the server's Next: line, when the data dir is not ./llmgw-data", async () => {
    const next = /Next: (.+)/.exec(server.output())?.[1];
    expect(next).toMatch(/^llmgw ctl models --server http:\/\/127\.0\.0\.1:\d+ --data-dir '.*state dir\/llmgw'$/);
    const result = await shell(next as string, elsewhere, searchPath);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("The catalog is empty");
  });

  it("the hint to a caller without a token says where the first one is, never the path where this server keeps it", async () => {
    const refused = await shell(`llmgw ctl --server ${server.url} models`, elsewhere, searchPath);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("this API needs a bearer token");
    // `ctl token create` itself needs a token: the first one comes from the server's start.
    expect(refused.stderr).toContain("The first admin token is the one the server printed at its first start");
    expect(refused.stderr).toContain("it keeps it in its data directory");
    expect(refused.stderr).toContain("llmgw ctl --data-dir DIR");
    expect(refused.stderr).not.toContain("state dir");
  });

  it("leaves --data-dir out when the server's data dir is ./llmgw-data of the folder it was started from", async () => {
    const folder = temporaryDirectory("llmgw-next-default-");
    const local = await startServerProcess({ cwd: folder, dataDir: path.join(folder, "llmgw-data") });
    try {
      const next = /Next: (.+)/.exec(local.output())?.[1] as string;
      expect(next).toMatch(/^llmgw ctl models --server \S+$/);
      expect((await shell(next, folder, searchPath)).code).toBe(0);
    } finally {
      await local.stop();
    }
  });

  it("says npx llmgw when llmgw was started through npx, which is how a clone runs it", async () => {
    // npm marks what it starts through npx / npm exec with npm_command=exec.
    const throughNpx = await startServerProcess({ cwd: elsewhere, dataDir: path.join(elsewhere, "npx-data"), env: { npm_command: "exec" } });
    try {
      expect(/Next: (.+)/.exec(throughNpx.output())?.[1]).toMatch(/^npx llmgw ctl models /);
    } finally {
      await throughNpx.stop();
    }
    const hint = await runCli(["ctl", "--server", server.url, "models"], { cwd: elsewhere, env: { npm_command: "exec" } });
    expect(hint.stderr).toContain("`npx llmgw ctl --data-dir DIR`");
    expect(hint.stderr).not.toContain("state dir");
    // Every line ctl prints, not only its errors: the presets listing's footer too.
    const presets = await runCli(["ctl", "--server", server.url, "--token", server.token, "model", "presets"], { env: { npm_command: "exec" } });
    expect(presets.stdout).toContain("Add one with `npx llmgw ctl model add PRESET [--name NAME]`.");
    const unreachable = await runCli(["ctl", "--server", "http://127.0.0.1:9", "models"], { env: { npm_command: "exec" } });
    expect(unreachable.stderr).toContain("Start it with `npx llmgw server`");
  });

  it("server --help names what the server serves: the admin API and the gateway", async () => {
    const help = await runCli(["server", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("the admin API (/api/v1)");
    expect(help.stdout.replace(/\s+/g, " ")).toContain("the OpenAI-compatible gateway (/v1)");
    // Each option says its default once.
    for (const option of help.stdout.replace(/\n\s{20,}/g, " ").split("\n").filter((line) => line.trim().startsWith("-"))) {
      expect(option.match(/default/g)?.length ?? 0, option).toBeLessThanOrEqual(1);
    }
  });

  it("through the real npx in the clone", async () => {
    // npx installs the clone into its cache as a file: dependency, and npm would run its prepare script
    // (a whole `npm run build` into this dist/) while the other test files run the built CLI from it.
    const result = await shell("npm_config_ignore_scripts=true npx --no-install llmgw ctl --server http://127.0.0.1:9 models", repositoryRoot, `${path.dirname(process.execPath)}:${process.env.PATH ?? ""}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("Start it with `npx llmgw server`");
    // npx resolves the clone's own bin before llmgw starts: slow on a busy machine, and no part of what is checked.
  }, 180_000);
});
