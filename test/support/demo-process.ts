import { spawn, type ChildProcess } from "node:child_process";
import { llmgwBin } from "./processes.js";

export interface DemoProcess {
  readonly process: ChildProcess;
  readonly url: string;
  readonly token: string;
  /** Everything it printed so far. */
  output(): string;
  readonly exited: Promise<number | null>;
}

/**
 * `llmgw demo` as a newcomer runs it, in its own process group (as a
 * terminal's foreground job: Ctrl-C goes to the whole group), once it has
 * printed its summary and the server and token to use.
 */
export async function startDemoProcess(readyWithinMs = 120_000, args: readonly string[] = []): Promise<DemoProcess> {
  // As someone who installed llmgw runs it: not marked as started by npx (as it is
  // when vitest itself was), so its printed lines say bare `llmgw`, which a test
  // pastes into a shell whose PATH holds this checkout's llmgw.
  const environment = { ...process.env };
  delete environment.npm_command;
  const demo = spawn(process.execPath, [llmgwBin, "demo", "--listen", "127.0.0.1:0", ...args], { detached: true, stdio: ["ignore", "pipe", "pipe"], env: environment });
  let output = "";
  demo.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  demo.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => demo.once("exit", (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`demo not ready in ${readyWithinMs / 1000} s:\n${output}`)), readyWithinMs);
    const check = () => {
      if (output.includes("Ctrl-C stops")) {
        clearTimeout(timer);
        resolve();
      }
    };
    demo.stdout?.on("data", check);
    demo.once("exit", (code) => reject(new Error(`demo exited with ${code}:\n${output}`)));
  });
  const [, url, token] = /export LLMGW_SERVER=(\S+) LLMGW_TOKEN=(\S+)/.exec(output) ?? [];
  return { process: demo, url: url as string, token: token as string, output: () => output, exited };
}

/**
 * Stops a demo a test did not stop itself: Ctrl-C first, so it stops its
 * replicas and agents and removes its folder, then SIGKILL for what is left.
 */
export async function stopDemo(demo: DemoProcess | undefined, withinMs = 30_000): Promise<void> {
  if (!demo || demo.process.exitCode !== null || demo.process.signalCode !== null) return;
  const group = -(demo.process.pid as number);
  process.kill(group, "SIGINT");
  const stopped = await Promise.race([demo.exited.then(() => true), new Promise<false>((resolve) => setTimeout(() => resolve(false), withinMs))]);
  if (!stopped) process.kill(group, "SIGKILL");
}
