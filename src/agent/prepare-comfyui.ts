import { spawn } from "node:child_process";
import { access, lstat, mkdir, readlink, rm, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { DomainError } from "../errors/light.js";
import type { ReplicaSpec } from "../protocol/index.js";

/** Where this node's ComfyUI is, and how to install it when it is not there. */
export interface ComfyuiSetup {
  /** The checkout (holding main.py): --engine-path comfyui=PATH, or DATA_DIR/ComfyUI when only an install command is given. */
  readonly folder: string;
  /** --comfyui-install: a shell command that puts ComfyUI in $COMFYUI_DIR; undefined when none is configured. */
  readonly installCommand: string | undefined;
}

export interface PrepareComfyuiOptions {
  readonly setup: ComfyuiSetup;
  readonly comfy: NonNullable<ReplicaSpec["comfy"]>;
  readonly nodeName: string;
  /** A simulated node without --simulate-fetch: the files are pretended, as weights are. */
  readonly pretendFiles: boolean;
  /** A simulated node: custom nodes are pretended (a marker folder), since a test has no git host to clone from. */
  readonly pretendCustomNodes: boolean;
  /** Puts one source in the weights cache and returns its path (the agent's own fetcher, resumable and checksummed). */
  readonly fetchFile: (source: string) => Promise<string>;
  readonly log: (line: string) => void;
  readonly signal: AbortSignal;
}

/** How long an install command may run: a clone and a pip install of torch take minutes, not hours. */
const installTimeoutMs = 30 * 60_000;

/** Installs in flight per folder: two replicas placed at once share one install instead of running two into one folder. */
const installs = new Map<string, Promise<void>>();

export async function comfyuiPresent(folder: string): Promise<boolean> {
  try {
    await access(path.join(folder, "main.py"));
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes a node ready to run one ComfyUI model: ComfyUI itself (installed
 * with the configured command when the folder has no main.py), the model's
 * files linked into models/<folder>/ under the names its workflow's loaders
 * use (the file stays once in the weights cache, shared by every model that
 * names it), and its custom nodes cloned into custom_nodes/ at their
 * revision. Returns the ComfyUI folder to run.
 */
export async function prepareComfyui(options: PrepareComfyuiOptions): Promise<string> {
  const { setup } = options;
  if (!(await comfyuiPresent(setup.folder))) {
    if (setup.installCommand === undefined) {
      if (!options.pretendFiles) {
        throw new DomainError(
          "engine_missing",
          `engine comfyui is not installed on node ${options.nodeName}: ${path.join(setup.folder, "main.py")} does not exist`,
          `Check ComfyUI out there, start the agent with --engine-path comfyui=PATH of a checkout, or give it --comfyui-install "COMMAND" to install it when a ComfyUI model is first placed.`,
        );
      }
    } else {
      await installOnce(setup.folder, () => runInstall(setup.folder, setup.installCommand as string, options));
    }
  }
  // Pretending on a node with no ComfyUI writes nothing: the folder may be one this user cannot create.
  const writable = await comfyuiPresent(setup.folder);
  for (const file of options.comfy.files) {
    if (options.signal.aborted) return setup.folder;
    const folder = path.join(setup.folder, "models", file.to.replace(/\/+$/, ""));
    const name = file.name ?? fileNameOf(file.source);
    if (options.pretendFiles) {
      if (writable) await mkdir(folder, { recursive: true });
      continue;
    }
    await mkdir(folder, { recursive: true });
    const cached = await options.fetchFile(file.source);
    await linkInto(path.join(folder, name), cached);
    options.log(`comfyui: ${file.source} → models/${path.relative(path.join(setup.folder, "models"), path.join(folder, name))}`);
  }
  for (const node of options.comfy.custom_nodes) {
    if (options.signal.aborted) return setup.folder;
    const target = path.join(setup.folder, "custom_nodes", repositoryName(node.source));
    if (options.pretendCustomNodes) {
      if (writable) {
        await mkdir(target, { recursive: true });
        await writeFile(path.join(target, ".llmgw-simulated"), `${node.source} ${node.revision}\n`);
      }
      continue;
    }
    await cloneAt(node.source, node.revision, target, options);
  }
  return setup.folder;
}

async function installOnce(folder: string, install: () => Promise<void>): Promise<void> {
  const running = installs.get(folder);
  if (running) return await running;
  const started = install();
  installs.set(folder, started);
  try {
    await started;
  } finally {
    installs.delete(folder);
  }
}

async function runInstall(folder: string, command: string, options: PrepareComfyuiOptions): Promise<void> {
  options.log(`comfyui: not found in ${folder}; installing with: ${command}`);
  await mkdir(path.dirname(folder), { recursive: true });
  const result = await runProcess("/bin/sh", ["-c", command], { ...process.env, COMFYUI_DIR: folder }, path.dirname(folder), options.signal);
  if (result.code !== 0) {
    throw new DomainError(
      "engine_failed",
      `installing ComfyUI on node ${options.nodeName} failed: \`${command}\` exited with ${result.code}${result.tail !== "" ? `: ${result.tail}` : ""}`,
      "Fix the agent's --comfyui-install command (it is run with $COMFYUI_DIR set to the folder to fill), or install ComfyUI by hand and pass --engine-path comfyui=PATH.",
    );
  }
  if (!(await comfyuiPresent(folder))) {
    throw new DomainError(
      "engine_failed",
      `the ComfyUI install command on node ${options.nodeName} finished but ${path.join(folder, "main.py")} does not exist`,
      "The command must put a ComfyUI checkout in $COMFYUI_DIR (for example: git clone https://github.com/comfyanonymous/ComfyUI \"$COMFYUI_DIR\").",
    );
  }
  options.log(`comfyui: installed in ${folder}`);
}

/** A symbolic link to the cached file; one already there pointing elsewhere is replaced (a model changed its file's source). */
async function linkInto(linkPath: string, target: string): Promise<void> {
  try {
    const existing = await lstat(linkPath);
    if (existing.isSymbolicLink() && (await readlink(linkPath)) === target) return;
    if (!existing.isSymbolicLink()) {
      // A file someone put there by hand is theirs: it is used as it is.
      return;
    }
    await rm(linkPath);
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ENOENT") throw error;
  }
  await symlink(target, linkPath);
}

async function cloneAt(source: string, revision: string, target: string, options: PrepareComfyuiOptions): Promise<void> {
  const git = async (args: string[], cwd: string) => await runProcess("git", args, { ...process.env, GIT_TERMINAL_PROMPT: "0" }, cwd, options.signal);
  let cloned = true;
  try {
    await access(path.join(target, ".git"));
  } catch {
    cloned = false;
  }
  if (!cloned) {
    await mkdir(path.dirname(target), { recursive: true });
    const clone = await git(["clone", "--quiet", source, target], path.dirname(target));
    if (clone.code !== 0) throw customNodeFailure(source, revision, `git clone exited with ${clone.code}: ${clone.tail}`, options.nodeName);
  }
  let checkout = await git(["checkout", "--quiet", revision], target);
  if (checkout.code !== 0) {
    // A revision newer than the clone: fetch once, then try again.
    await git(["fetch", "--quiet", "--tags", "origin"], target);
    checkout = await git(["checkout", "--quiet", revision], target);
  }
  if (checkout.code !== 0) throw customNodeFailure(source, revision, `git checkout exited with ${checkout.code}: ${checkout.tail}`, options.nodeName);
  options.log(`comfyui: custom node ${source} at ${revision} in ${target}`);
}

function customNodeFailure(source: string, revision: string, why: string, nodeName: string): DomainError {
  return new DomainError(
    "source_unavailable",
    `custom node ${source} at ${revision} could not be put on node ${nodeName}: ${why}`,
    "Check the repository URL and the revision (a commit or tag it has), and that the node reaches the repository.",
  );
}

function runProcess(program: string, args: string[], env: NodeJS.ProcessEnv, cwd: string, signal: AbortSignal): Promise<{ code: number; tail: string }> {
  return new Promise((resolve) => {
    const child = spawn(program, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], signal, timeout: installTimeoutMs });
    let output = "";
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-2000);
    };
    child.stdout.on("data", keep);
    child.stderr.on("data", keep);
    child.on("error", (error) => resolve({ code: -1, tail: error.message }));
    child.on("close", (code) => resolve({ code: code ?? -1, tail: output.trim().split("\n").slice(-5).join(" | ") }));
  });
}

/** The last path segment of a source, as ComfyUI's loaders list files by name. */
export function fileNameOf(source: string): string {
  const withoutQuery = source.replace(/[?#].*$/, "");
  const segment = withoutQuery.split("/").filter((part) => part !== "").pop() ?? "model.safetensors";
  return segment.replace(/@.*$/, "");
}

/** custom_nodes/<name>: the repository's name without .git, as ComfyUI-Manager names its clones. */
export function repositoryName(source: string): string {
  const last = new URL(source).pathname.split("/").filter((part) => part !== "").pop() ?? "custom-node";
  return last.replace(/\.git$/, "").replace(/[^A-Za-z0-9._-]/g, "_");
}
