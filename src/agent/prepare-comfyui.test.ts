import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, readlinkSync, writeFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { prepareComfyui, type PrepareComfyuiOptions } from "./prepare-comfyui.js";

const folders: string[] = [];
afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});
function workspace(): string {
  const folder = mkdtempSync(path.join(tmpdir(), "llmgw-comfy-prepare-"));
  folders.push(folder);
  return folder;
}

/** An install command as an operator writes one: a script that fills $COMFYUI_DIR with a checkout. */
function installScript(root: string, body = 'mkdir -p "$COMFYUI_DIR" && echo "print(1)" > "$COMFYUI_DIR/main.py"'): string {
  const script = path.join(root, "install-comfyui.sh");
  writeFileSync(script, `#!/bin/sh\nset -e\necho installing >> "${path.join(root, "install.log")}"\n${body}\n`, { mode: 0o755 });
  return script;
}

function options(root: string, overrides: Partial<PrepareComfyuiOptions> = {}): PrepareComfyuiOptions {
  return {
    setup: { folder: path.join(root, "ComfyUI"), installCommand: undefined },
    comfy: { files: [], custom_nodes: [] },
    nodeName: "gpu-1",
    pretendFiles: false,
    pretendCustomNodes: false,
    fetchFile: async () => {
      throw new Error("no fetch expected");
    },
    log: () => undefined,
    signal: new AbortController().signal,
    ...overrides,
  };
}

describe("preparing a node for a ComfyUI model", () => {
  it("installs ComfyUI once with the configured command, even for two replicas at once", async () => {
    const root = workspace();
    const setup = { folder: path.join(root, "ComfyUI"), installCommand: installScript(root) };
    const [first, second] = await Promise.all([prepareComfyui(options(root, { setup })), prepareComfyui(options(root, { setup }))]);
    expect(first).toBe(setup.folder);
    expect(second).toBe(setup.folder);
    expect(existsSync(path.join(setup.folder, "main.py"))).toBe(true);
    expect(readFileSync(path.join(root, "install.log"), "utf8")).toBe("installing\n");
  });

  it("says which command failed and how, and refuses an install that left no main.py", async () => {
    const root = workspace();
    const failing = { folder: path.join(root, "ComfyUI"), installCommand: `${installScript(root, "echo 'pip: no matching distribution for torch' >&2; exit 3")}` };
    await expect(prepareComfyui(options(root, { setup: failing }))).rejects.toThrow(/installing ComfyUI on node gpu-1 failed: `.*install-comfyui.sh` exited with 3: pip: no matching distribution for torch/);
    const empty = { folder: path.join(root, "ComfyUI"), installCommand: "true" };
    await expect(prepareComfyui(options(root, { setup: empty }))).rejects.toThrow(/finished but .*ComfyUI\/main.py does not exist/);
  });

  it("refuses a node with no ComfyUI and no install command, naming both ways to fix it", async () => {
    const root = workspace();
    await expect(prepareComfyui(options(root))).rejects.toThrow(/engine comfyui is not installed on node gpu-1/);
  });

  it("links the model's files into models/<folder>/ under the names its loaders use", async () => {
    const root = workspace();
    const cached = path.join(root, "weights", "flux1-schnell-fp8.safetensors");
    mkdirSync(path.dirname(cached), { recursive: true });
    writeFileSync(cached, "weights");
    const setup = { folder: path.join(root, "ComfyUI"), installCommand: installScript(root) };
    const fetched: string[] = [];
    await prepareComfyui(
      options(root, {
        setup,
        comfy: {
          files: [
            { source: "hf://Comfy-Org/flux1-schnell@main/flux1-schnell-fp8.safetensors", to: "checkpoints/" },
            { source: "https://mirror.example/vae/ae.safetensors", to: "vae", name: "flux-ae.safetensors" },
          ],
          custom_nodes: [],
        },
        fetchFile: async (source) => {
          fetched.push(source);
          return cached;
        },
      }),
    );
    expect(fetched).toHaveLength(2);
    expect(readlinkSync(path.join(setup.folder, "models", "checkpoints", "flux1-schnell-fp8.safetensors"))).toBe(cached);
    expect(readFileSync(path.join(setup.folder, "models", "vae", "flux-ae.safetensors"), "utf8")).toBe("weights");
  });

  it("clones a custom node at its revision into custom_nodes/", async () => {
    const root = workspace();
    const repository = path.join(root, "ComfyUI-Example.git");
    const git = (args: string[], cwd: string) => execFileSync("git", args, { cwd, env: { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example" } }).toString().trim();
    mkdirSync(repository);
    git(["init", "--quiet"], repository);
    writeFileSync(path.join(repository, "nodes.py"), "version = 1\n");
    git(["add", "."], repository);
    git(["commit", "--quiet", "-m", "one"], repository);
    const first = git(["rev-parse", "HEAD"], repository);
    writeFileSync(path.join(repository, "nodes.py"), "version = 2\n");
    git(["commit", "--quiet", "-am", "two"], repository);
    const setup = { folder: path.join(root, "ComfyUI"), installCommand: installScript(root) };
    await prepareComfyui(options(root, { setup, comfy: { files: [], custom_nodes: [{ source: `file://${repository}`, revision: first }] } }));
    expect(readFileSync(path.join(setup.folder, "custom_nodes", "ComfyUI-Example", "nodes.py"), "utf8")).toBe("version = 1\n");
    await expect(prepareComfyui(options(root, { setup, comfy: { files: [], custom_nodes: [{ source: `file://${repository}`, revision: "v9-missing" }] } }))).rejects.toThrow(
      /custom node file:\/\/.*ComfyUI-Example.git at v9-missing could not be put on node gpu-1: git checkout exited/,
    );
  });
});
