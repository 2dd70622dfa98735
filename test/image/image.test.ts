import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quoteForShell } from "../../src/files/quote-for-shell.js";
import { freePort } from "../support/processes.js";

/**
 * The OCI image deploy/image/build.sh made (LLMGW_IMAGE_ARCHIVE, an OCI
 * archive; `.ci/image` builds it and runs this file): its configuration and
 * its files read from the archive itself, then, where this machine runs
 * containers (podman as root, host networking), `llmgw demo` started in it
 * and asked a question through its gateway.
 */
const archive = process.env.LLMGW_IMAGE_ARCHIVE ?? "";
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const version = (JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as { version: string }).version;

interface ImageConfig {
  config: { Entrypoint?: string[]; Cmd?: string[]; Env?: string[]; User?: string; WorkingDir?: string; Volumes?: Record<string, unknown>; Labels?: Record<string, string>; ExposedPorts?: Record<string, unknown> };
  rootfs: { diff_ids: string[] };
}

const run = (program: string, args: readonly string[]) => execFileSync(program, args, { encoding: "utf8", maxBuffer: 512 * 1024 * 1024, stdio: ["ignore", "pipe", "pipe"] });

describe.runIf(archive !== "")("the llmgw OCI image", () => {
  let unpacked: string;
  let config: ImageConfig;
  let files: Set<string>;
  /** The layer's entries as tar names them (with or without a leading ./, by the tool that wrote it). */
  let members: string[];
  let layer: string;

  beforeAll(() => {
    unpacked = mkdtempSync(path.join(tmpdir(), "llmgw-image-test-"));
    run("tar", ["-xf", archive, "-C", unpacked]);
    const index = JSON.parse(readFileSync(path.join(unpacked, "index.json"), "utf8")) as { manifests: { digest: string }[] };
    const blob = (digest: string) => path.join(unpacked, "blobs", ...digest.split(":"));
    const manifest = JSON.parse(readFileSync(blob(index.manifests[0]?.digest as string), "utf8")) as { config: { digest: string }; layers: { digest: string }[] };
    config = JSON.parse(readFileSync(blob(manifest.config.digest), "utf8")) as ImageConfig;
    expect(manifest.layers).toHaveLength(1);
    layer = blob(manifest.layers[0]?.digest as string);
    members = run("tar", ["-tf", layer]).split("\n");
    files = new Set(members.map((file) => file.replace(/^\.\//, "")));
  }, 300_000);

  // The image's tree is a gigabyte of small files: removing it takes a while on a busy machine.
  afterAll(() => {
    if (unpacked) rmSync(unpacked, { recursive: true, force: true });
  }, 300_000);

  it("starts llmgw under tini as the non-root user llmgw, with its data directory as a volume and its version and source as labels", () => {
    expect(config.config.Entrypoint).toEqual(["/usr/bin/tini", "--", "/usr/local/bin/llmgw"]);
    expect(config.config.Cmd).toEqual(["--help"]);
    expect(config.config.User).toBe("llmgw");
    expect(config.config.WorkingDir).toBe("/var/lib/llmgw");
    expect(Object.keys(config.config.Volumes ?? {})).toEqual(["/var/lib/llmgw"]);
    expect(Object.keys(config.config.ExposedPorts ?? {})).toEqual(["8080/tcp"]);
    expect(config.config.Labels).toMatchObject({
      "org.opencontainers.image.version": version,
      "org.opencontainers.image.source": expect.stringMatching(/\S/),
      "org.opencontainers.image.revision": expect.stringMatching(/^[0-9a-f]{40}$/),
      "io.llmgw.node.version": expect.stringMatching(/^v\d+\./),
    });
    const passwd = run("tar", ["-xOf", layer, members.find((member) => member.replace(/^\.\//, "") === "etc/passwd") ?? "etc/passwd"]);
    expect(passwd).toMatch(/^llmgw:x:10001:10001::\/var\/lib\/llmgw:\/usr\/sbin\/nologin$/m);
  });

  it("holds Node, llmgw with its runtime dependencies and native modules, and the built-in llama.cpp, without the dev dependencies", () => {
    const installed = "opt/llmgw/lib/node_modules/llmgw";
    for (const file of [
      "usr/local/bin/node",
      "usr/bin/tini",
      `${installed}/bin/llmgw.js`,
      `${installed}/dist/src/cli/main.js`,
      `${installed}/presets/qwen2.5-0.5b-instruct.yaml`,
      `${installed}/node_modules/better-sqlite3/build/Release/better_sqlite3.node`,
      `${installed}/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64/llama-addon.node`,
    ]) {
      expect(files.has(file), file).toBe(true);
    }
    expect([...files].some((file) => file.startsWith(`${installed}/node_modules/vitest/`))).toBe(false);
    expect([...files].some((file) => file.startsWith(`${installed}/node_modules/typescript/`))).toBe(false);
  });

  /**
   * `llmgw demo` started from the image, asked a question through its
   * gateway. With podman where this machine runs containers
   * (LLMGW_IMAGE_PODMAN=1); otherwise the image's own file system, its
   * user, working directory, environment and entrypoint, run without a
   * container runtime: unshare (its own mount and PID namespaces, /proc and
   * /dev inside) and chroot, on the host's network. The sandbox this was
   * written in cannot run containers (podman's runtime fails on setrlimit
   * and on its hybrid cgroups; docs/kubernetes.md has the commands and
   * their errors), and what runs is the same tree either way.
   */
  describe(process.env.LLMGW_IMAGE_PODMAN === "1" ? "run with podman (as root, host networking)" : "run from its file system with unshare and chroot (host networking)", () => {
    let demo: ChildProcess | undefined;
    let output = "";
    let url: string;
    let tree: string;
    const name = `llmgw-image-test-${process.pid}`;

    beforeAll(async () => {
      const port = await freePort();
      const demoArgs = ["demo", "--listen", `127.0.0.1:${port}`];
      if (process.env.LLMGW_IMAGE_PODMAN === "1") {
        // vfs: storage that needs no overlay mount, as inside a container; --network host: the demo listens on the host's 127.0.0.1.
        demo = spawn("podman", ["--storage-driver", "vfs", "run", "--rm", "--name", name, "--network", "host", `oci-archive:${archive}`, ...demoArgs], { stdio: ["ignore", "pipe", "pipe"], detached: true });
      } else {
        tree = path.join(unpacked, "tree");
        mkdirSync(tree);
        run("tar", ["-xf", layer, "-C", tree]);
        // The image's user by its ids in the image's own /etc/passwd (the host may have no such user).
        const user = config.config.User ?? "root";
        const entry = readFileSync(path.join(tree, "etc/passwd"), "utf8").split("\n").find((line) => line.startsWith(`${user}:`))?.split(":");
        const ids = `${entry?.[2] ?? "0"}:${entry?.[3] ?? "0"}`;
        const entrypoint = [...(config.config.Entrypoint ?? []), ...demoArgs].map(quoteForShell).join(" ");
        const environment = (config.config.Env ?? []).map(quoteForShell).join(" ");
        const inside = [
          `mount --rbind /dev ${quoteForShell(`${tree}/dev`)}`,
          `exec chroot --userspec=${ids} ${quoteForShell(tree)} /usr/bin/env -i HOME=${quoteForShell(config.config.WorkingDir ?? "/")} ${environment} /bin/sh -c ${quoteForShell(`cd ${quoteForShell(config.config.WorkingDir ?? "/")} && exec ${entrypoint}`)}`,
        ].join(" && ");
        demo = spawn("unshare", ["--mount", "--pid", "--fork", `--mount-proc=${tree}/proc`, "/bin/sh", "-c", inside], { stdio: ["ignore", "pipe", "pipe"], detached: true });
      }
      demo.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      demo.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the demo in the image was not ready in 240 s:\n${output}`)), 240_000);
        demo?.stdout?.on("data", () => {
          if (output.includes("Ctrl-C stops")) {
            clearTimeout(timer);
            resolve();
          }
        });
        demo?.once("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`the image's demo exited with ${code}:\n${output}`));
        });
      });
      url = /export LLMGW_SERVER=(\S+)/.exec(output)?.[1] as string;
    }, 300_000);

    afterAll(async () => {
      if (!demo || demo.exitCode !== null) return;
      const exited = new Promise((resolve) => demo?.once("exit", resolve));
      // Ctrl-C as at a terminal: the demo stops its replicas and agents; PID 1 of the namespace gone, the kernel stops the rest.
      process.kill(-(demo.pid as number), "SIGINT");
      const stopped = await Promise.race([exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), 30_000))]);
      if (!stopped) process.kill(-(demo.pid as number), "SIGKILL");
    }, 60_000);

    it("answers a question through the gateway of the demo started from the image", async () => {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 120_000 });
      const answer = await client.chat.completions.create({ model: "qwen2.5-7b-instruct", messages: [{ role: "user", content: "count to three" }], max_tokens: 12 });
      expect(answer.choices[0]?.message.content?.length).toBeGreaterThan(0);
      expect(answer.usage?.completion_tokens).toBeGreaterThan(0);
      // The server in the image is the release this checkout packed.
      const served = (await (await fetch(`${url}/api/v1/version`)).json()) as Record<string, unknown>;
      expect(JSON.stringify(served)).toContain(`"${version}"`);
    }, 180_000);
  });
});
