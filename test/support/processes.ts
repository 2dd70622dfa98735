import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { temporaryDirectory } from "./temporary-directory.js";

/** The built CLI, as a user runs it (npm test builds dist/ first). */
export const llmgwBin = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../bin/llmgw.js");

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `llmgw ARGS` to completion, as a person at a terminal would. */
export function runCli(args: readonly string[], options: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<CliResult> {
  return runToCompletion(process.execPath, [llmgwBin, ...args], { cwd: options.cwd ?? process.cwd(), env: { ...withoutLlmgwVariables(process.env), ...options.env } });
}

/**
 * Runs a program to completion and collects what it printed. With `withinMs`
 * it runs in a process group of its own, and one that has not finished by
 * then is killed with everything it started and rejected, naming `what` and
 * what it printed so far: a test of pasted lines then fails on the line that
 * hung, rather than at its own timeout with no word of which.
 */
export function runToCompletion(
  program: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string | undefined>; withinMs?: number; what?: string },
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const bounded = options.withinMs !== undefined;
    const child = spawn(program, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"], detached: bounded });
    let stdout = "";
    let stderr = "";
    let exitCode: number | null | undefined;
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.on("exit", (code) => (exitCode = code));
    const timer = bounded
      ? setTimeout(() => {
          try {
            process.kill(-(child.pid as number), "SIGKILL");
          } catch {
            // The group is gone already: nothing left to stop.
          }
          const how =
            exitCode === undefined
              ? `did not finish within ${(options.withinMs as number) / 1000} s`
              : `exited (${exitCode}), but a process it started still held its output open after ${(options.withinMs as number) / 1000} s`;
          reject(new Error(`${options.what ?? [program, ...args].join(" ")}\n  ${how}; killed with its process group. It printed:\n${stdout}${stderr ? `\n(stderr)\n${stderr}` : ""}`));
        }, options.withinMs)
      : undefined;
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/**
 * Tests choose their server and token explicitly; a developer's own LLMGW_*
 * settings must not leak in. Nor npm's npm_command: run under `npx vitest`,
 * every llmgw started here would believe it was started through npx.
 */
export function withoutLlmgwVariables(environment: NodeJS.ProcessEnv): Record<string, string | undefined> {
  return Object.fromEntries(
    Object.entries(environment).filter(([key]) => (!key.startsWith("LLMGW_") || key === "LLMGW_TEST_POSTGRES_URL") && key !== "npm_command"),
  );
}

export interface ServerProcess {
  readonly url: string;
  readonly dataDir: string;
  /** The admin token from DATA_DIR/admin-token; empty when this data directory never created one (a shared Postgres did). */
  readonly token: string;
  readonly output: () => string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
  /** kill -9, as a crash: resolves once the process has exited, so its port and data directory are free for a start again. */
  kill(): Promise<void>;
}

/** Starts `llmgw server` on a free loopback port and waits until it says where it listens. */
export async function startServerProcess(
  options: { args?: readonly string[]; cwd?: string; dataDir?: string; env?: Record<string, string | undefined> } = {},
): Promise<ServerProcess> {
  const dataDir = options.dataDir ?? path.join(temporaryDirectory(), "llmgw-data");
  const child = spawn(process.execPath, [llmgwBin, "server", "--listen", "127.0.0.1:0", "--data-dir", dataDir, ...(options.args ?? [])], {
    cwd: options.cwd ?? process.cwd(),
    env: { ...withoutLlmgwVariables(process.env), ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start within 30 s:\n${output}`)), 30_000);
    const check = () => {
      const match = /listening on (https?:\/\/[\d.:]+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    };
    child.stdout?.on("data", check);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    dataDir,
    token: existsSync(path.join(dataDir, "admin-token")) ? readFileSync(path.join(dataDir, "admin-token"), "utf8").trim() : "",
    output: () => output,
    child,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
    kill: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGKILL");
      }),
  };
}

/** A loopback port free now, for a server that must be restarted on the same address. */
export async function freePort(): Promise<number> {
  return await new Promise((resolve) => {
    const server = net.createServer();
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** `llmgw ctl ARGS` against a running server with its admin token. */
export function ctlAgainst(server: Pick<ServerProcess, "url" | "token">, args: readonly string[]): Promise<CliResult> {
  return runCli(["ctl", "--server", server.url, "--token", server.token, ...args]);
}

/** The same, for a command that must succeed: its output, or an error carrying what it printed on stderr. */
export async function ctlOutput(server: Pick<ServerProcess, "url" | "token">, args: readonly string[]): Promise<string> {
  const result = await ctlAgainst(server, args);
  if (result.code !== 0) throw new Error(`ctl ${args.join(" ")} failed (${result.code}): ${result.stderr}`);
  return result.stdout;
}
